import { useId } from 'react';
import { useForm, type UseFormSetError } from 'react-hook-form';
import type { ZodIssue } from 'zod';
import { WEBHOOK_ENDPOINT_LIMITS, webhookEndpointBody, webhookEndpointPatchBody, type WebhookEndpointBody } from '../../../shared/webhookEndpointSchemas';
import { SYSTEM_EVENT_NAMES } from '../../../shared/eventNames';
import { ApiError } from '../api/client';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';

/** What the form edits: the events as typed (patterns one per line or comma-separated), split on submit. */
export interface WebhookEndpointFormValues {
  url: string;
  events: string;
  description: string;
  enabled: boolean;
}

const FIELDS = ['url', 'events', 'description', 'enabled'] as const;
type Field = (typeof FIELDS)[number];

/** The wildcards most endpoints want, offered above the full list of names Mailroom records. */
const COMMON_PATTERNS = ['*', 'email.*', 'contact.*', 'segment.*'];

/** Patterns as typed: one per line or separated by commas (an event name may hold spaces, so spaces do not split). */
export function patternsIn(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((pattern) => pattern.trim())
    .filter(Boolean);
}

/** The first message per field: an issue's path starts with the body's field (`events.3` is a pattern of `events`). */
function setFieldErrors(setError: UseFormSetError<WebhookEndpointFormValues>, items: Array<{ field: string; message: string }>): boolean {
  let shown = false;
  const seen = new Set<Field>();
  for (const { field, message } of items) {
    const name = FIELDS.find((known) => known === field.split('.')[0]);
    if (!name || seen.has(name)) continue;
    seen.add(name);
    setError(name, { type: 'server', message });
    shown = true;
  }
  return shown;
}

const issueItems = (issues: ZodIssue[]) => issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message }));

interface WebhookEndpointFormProps {
  /** Creating (POST, checked with its schema) or editing (PATCH, with its own). */
  mode: 'create' | 'edit';
  defaultValues: WebhookEndpointFormValues;
  submitLabel: string;
  busy: boolean;
  /** The API's refusal of the last submit: its field errors go on the fields, its message above the buttons. */
  error: unknown;
  onSubmit: (body: WebhookEndpointBody) => Promise<unknown>;
  onCancel: () => void;
}

/**
 * URL, Events, Description and Enabled: the form of a new endpoint and of an edit. Checked in the
 * browser with the API's own request schema (shared/webhookEndpointSchemas.ts) before it is sent;
 * whether the URL's host may be called is the server's to say (after DNS), as a 422 on "URL".
 */
export function WebhookEndpointForm({ mode, defaultValues, submitLabel, busy, error, onSubmit, onCancel }: WebhookEndpointFormProps) {
  const ids = { events: useId(), eventsHint: useId(), eventsError: useId(), suggestions: useId(), enabled: useId(), enabledHint: useId() };
  const { register, handleSubmit, setError, setValue, getValues, formState } = useForm<WebhookEndpointFormValues>({ defaultValues });

  async function submit(values: WebhookEndpointFormValues) {
    const body = {
      url: values.url.trim(),
      events: patternsIn(values.events),
      description: values.description.trim() || null,
      enabled: values.enabled,
    };
    const checked = (mode === 'create' ? webhookEndpointBody : webhookEndpointPatchBody).safeParse(body);
    if (!checked.success) {
      setFieldErrors(setError, issueItems(checked.error.issues));
      return;
    }
    try {
      await onSubmit({ ...body, events: [...new Set(body.events)] });
    } catch (err) {
      if (err instanceof ApiError) setFieldErrors(setError, err.fieldErrors);
    }
  }

  function addPattern(pattern: string) {
    const current = getValues('events');
    if (patternsIn(current).includes(pattern)) return;
    const joined = current.trim() ? `${current.replace(/[\s,]*$/, '')}\n${pattern}` : pattern;
    setValue('events', joined, { shouldDirty: true });
  }

  const eventsError = formState.errors.events?.message;
  return (
    <form className="form wh-form" noValidate onSubmit={(event) => void handleSubmit(submit)(event)}>
      <TextField
        label="URL"
        type="url"
        inputMode="url"
        autoComplete="off"
        spellCheck={false}
        placeholder="https://app.example.com/hooks/mailroom"
        maxLength={WEBHOOK_ENDPOINT_LIMITS.url}
        hint="Where Mailroom POSTs each message: https:// (or http://). Private and loopback addresses are refused unless the instance allows them."
        error={formState.errors.url?.message}
        {...register('url')}
      />
      <div className="field">
        <label htmlFor={ids.events}>Events</label>
        <textarea
          id={ids.events}
          className="wh-textarea wh-code"
          rows={4}
          spellCheck={false}
          autoComplete="off"
          placeholder={'email.*\ncontact.unsubscribed'}
          aria-invalid={eventsError ? true : undefined}
          aria-describedby={[ids.eventsHint, eventsError ? ids.eventsError : null].filter(Boolean).join(' ')}
          {...register('events')}
        />
        <p id={ids.eventsHint} className="field-hint">
          Patterns, one per line or separated by commas: an event name (<code>contact.unsubscribed</code>), a prefix wildcard (<code>email.*</code>) or{' '}
          <code>*</code> for every event, tracked ones included. Up to {WEBHOOK_ENDPOINT_LIMITS.events}.
        </p>
        {eventsError ? (
          <p id={ids.eventsError} className="field-error">
            {eventsError}
          </p>
        ) : null}
        <div className="wh-suggestions" role="group" aria-labelledby={ids.suggestions}>
          <span id={ids.suggestions} className="wh-suggestions-label">
            Add a pattern
          </span>
          {COMMON_PATTERNS.map((pattern) => (
            <SuggestionButton key={pattern} pattern={pattern} onAdd={addPattern} />
          ))}
        </div>
        <details className="wh-names">
          <summary>Events Mailroom records</summary>
          <div className="wh-suggestions" role="group" aria-label="Add an event name">
            {SYSTEM_EVENT_NAMES.map((name) => (
              <SuggestionButton key={name} pattern={name} onAdd={addPattern} />
            ))}
          </div>
          <p className="field-hint">
            Also <code>segment.&lt;slug&gt;.entry</code> and <code>.exit</code> of tracked segments, and any name your application tracks with{' '}
            <code>POST /v1/track</code>.
          </p>
        </details>
      </div>
      <TextField
        label="Description"
        autoComplete="off"
        placeholder="CRM sync"
        maxLength={WEBHOOK_ENDPOINT_LIMITS.description}
        hint="Optional: what the endpoint is for. Shown instead of its URL."
        error={formState.errors.description?.message}
        {...register('description')}
      />
      <div className="wh-checkbox">
        <input id={ids.enabled} type="checkbox" aria-describedby={ids.enabledHint} {...register('enabled')} />
        <label htmlFor={ids.enabled}>Enabled</label>
        <span id={ids.enabledHint} className="muted">
          A disabled endpoint receives nothing new; enabling it again sends what is still pending.
        </span>
      </div>
      {error ? <ErrorNotice error={error} /> : null}
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy} aria-busy={busy || undefined}>
          {submitLabel}
        </button>
        <button type="button" className="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function SuggestionButton({ pattern, onAdd }: { pattern: string; onAdd: (pattern: string) => void }) {
  return (
    <button type="button" className="wh-chip" aria-label={`Add ${pattern}`} onClick={() => onAdd(pattern)}>
      <code>{pattern}</code>
    </button>
  );
}

/** The form's values for an endpoint as the API answers it (or empty, for a new one). */
export function formValuesOf(endpoint?: { url: string; events: string[]; description: string | null; enabled: boolean }): WebhookEndpointFormValues {
  if (!endpoint) return { url: '', events: '', description: '', enabled: true };
  return { url: endpoint.url, events: endpoint.events.join('\n'), description: endpoint.description ?? '', enabled: endpoint.enabled };
}
