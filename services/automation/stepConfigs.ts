/**
 * The rules of step configs (contract section 12), in one place: the kinds' values, each kind's
 * config as a zod schema (what may be written, and the normalised shape that is stored: the config
 * types are the schemas' outputs), the limits, the wait arithmetic, and the run-time readers.
 *
 * A config is checked twice. When it is written, the workflow definition endpoints validate it with
 * the schemas here (through api/schemas/automationSchemas.ts) and store what they answer. When a
 * step runs, the readers here (and in steps/) still check what they use, because a step runs with
 * the config as it is when the execution reaches it, and a config that cannot run fails the step
 * with a clear error (StepConfigError) instead of the execution as a whole.
 */
import { z } from 'zod';
import { conditionTreeIssues, OPERATORS, type Operator } from '../../db/conditions/conditionTree';
import { findJsonProblem } from '../../lib/untrustedJson';
import { webhookMethods } from '../../lib/webhooks/webhookRequest';
import { emailAddress, enumOf, finiteNumber, optional, text, uuid } from '../../shared/zodFields';
import { contactData, RESERVED_DATA_KEYS } from '../contacts/contactDataRules';
import type { AddableStepType } from './automationGraph';
import { CONDITION_STEP_FIELD_HELP, parseConditionStepField } from './conditionStepField';

export const DELAY_UNITS = ['minutes', 'hours', 'days'] as const;
export type DelayUnit = (typeof DELAY_UNITS)[number];

export const SUBSCRIPTION_ACTIONS = ['none', 'subscribe', 'unsubscribe'] as const;
export type SubscriptionAction = (typeof SUBSCRIPTION_ACTIONS)[number];

/** The methods the webhook client sends (lib/webhooks). */
export const WEBHOOK_METHODS = webhookMethods;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

/** The filter operators that compare a value (the event and segment operators belong to the condition tree's own fields). */
export const CONDITION_STEP_OPERATORS: Operator[] = OPERATORS.filter(
  (o) => !['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin', 'memberOfSegment', 'notMemberOfSegment'].includes(o),
);

/** Headers the HTTP client or the signature own: a WEBHOOK step may not set them. */
export const RESERVED_WEBHOOK_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'x-mailroom-signature']);
/** An HTTP header name: token characters only. */
export const WEBHOOK_HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** A DELAY, or a WAIT_FOR_EVENT's timeout, waits at most 365 days. */
export const MAX_WAIT_SECONDS = 365 * 24 * 60 * 60;
export const MAX_DELAY_MS = MAX_WAIT_SECONDS * 1000;

/** Bounds of the step configs, checked when a config is written. */
export const STEP_CONFIG_LIMITS = {
  /** A WAIT_FOR_EVENT's event name, and a workflow's trigger event. */
  eventName: 200,
  /** DELAY total and WAIT_FOR_EVENT timeout. */
  maxWaitSeconds: MAX_WAIT_SECONDS,
  exitReason: 500,
  webhookUrl: 2048,
  webhookHeaders: 50,
  webhookHeaderName: 100,
  webhookHeaderValue: 998,
  /** A WEBHOOK body, as text or as JSON. */
  webhookBodyBytes: 64 * 1024,
  conditionField: 300,
} as const;

// ---------------------------------------------------------------------------------------------
// Rules used both when a config is written and when it runs

const UNIT_SECONDS: Record<DelayUnit, number> = { minutes: 60, hours: 3600, days: 86_400 };

/** Seconds a DELAY waits. */
export function delaySeconds(config: DelayConfig): number {
  return config.amount * UNIT_SECONDS[config.unit];
}

/** Milliseconds a DELAY waits, rounded up to a whole millisecond (what a durable timer takes). */
export function delayMilliseconds(config: DelayConfig): number {
  return Math.ceil(delaySeconds(config) * 1000);
}

/** A WEBHOOK url whose `{{placeholders}}` are filled at run time: checked with them stood in for. */
export function webhookUrlProblem(url: string): string | null {
  if (/\s|[\u0000-\u001f\u007f]/.test(url)) return 'url must not contain spaces, line breaks or other control characters';
  if (!/^https?:\/\//i.test(url)) return 'url must start with http:// or https://';
  let parsed: URL;
  try {
    parsed = new URL(url.replace(/\{\{\{?[^{}]*\}?\}\}/g, 'x'));
  } catch {
    return 'url is not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'url must use http or https';
  if (!parsed.hostname) return 'url needs a host';
  return null;
}

// ---------------------------------------------------------------------------------------------
// What a config may hold when it is written, and the shape it is stored in

const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * An event name a workflow listens for (its trigger, a WAIT_FOR_EVENT). Unlike /v1/track, the
 * names Mailroom emits itself (`contact.subscribed`, `email.opened`, `segment.<slug>.entry` …) are
 * allowed: they are what many workflows start on.
 */
export const listenedEventName = (field: string) =>
  text(field)
    .refine((s) => !CONTROL.test(s), `${field} must not contain line breaks or other control characters`)
    .transform((s) => s.trim())
    .pipe(
      z.string().min(1, `${field} must not be empty`).max(STEP_CONFIG_LIMITS.eventName, `${field} must be at most ${STEP_CONFIG_LIMITS.eventName} characters`),
    );

/**
 * SEND_EMAIL: `recipient` is always present once saved, `{ type: 'CONTACT' }` when the client sent
 * none. What needs the database (the template belonging to the project) is checked by the caller.
 */
export const sendEmailConfig = z
  .object({
    templateId: uuid('templateId'),
    recipient: z
      .object(
        {
          type: enumOf('recipient.type', ['CONTACT', 'CUSTOM'] as const),
          customEmail: optional(emailAddress),
        },
        { invalid_type_error: 'recipient must be an object' },
      )
      .superRefine((r, ctx) => {
        if (r.type === 'CUSTOM' && !r.customEmail)
          ctx.addIssue({ code: 'custom', path: ['customEmail'], message: 'customEmail is required when recipient.type is CUSTOM' });
        if (r.type === 'CONTACT' && r.customEmail)
          ctx.addIssue({ code: 'custom', path: ['customEmail'], message: 'customEmail is only for recipient.type CUSTOM' });
      })
      .optional(),
  })
  .transform((c) => ({
    templateId: c.templateId,
    recipient: c.recipient?.type === 'CUSTOM' ? { type: 'CUSTOM' as const, customEmail: c.recipient.customEmail! } : { type: 'CONTACT' as const },
  }));
export type SendEmailConfig = z.output<typeof sendEmailConfig>;

const delayFields = z.object({
  amount: finiteNumber('amount').positive('amount must be greater than 0'),
  unit: enumOf('unit', DELAY_UNITS),
});
/** DELAY: `amount` may be fractional (0.1 minutes is six seconds); the total is at most 365 days. */
export type DelayConfig = z.output<typeof delayFields>;
export const delayConfig = delayFields.superRefine((c, ctx) => {
  if (delaySeconds(c) > STEP_CONFIG_LIMITS.maxWaitSeconds) {
    ctx.addIssue({ code: 'too_big', type: 'number', maximum: 365, inclusive: true, path: ['amount'], message: 'A delay is at most 365 days' });
  }
});

/** WAIT_FOR_EVENT: `timeout` in seconds (fractional allowed), absent when the step waits for ever. */
export const waitForEventConfig = z
  .object({
    eventName: listenedEventName('eventName'),
    timeout: finiteNumber('timeout')
      .positive('timeout must be a positive number of seconds')
      .max(STEP_CONFIG_LIMITS.maxWaitSeconds, `timeout is at most ${STEP_CONFIG_LIMITS.maxWaitSeconds} seconds (365 days)`)
      .nullable()
      .optional(),
  })
  .transform((c) => (c.timeout == null ? { eventName: c.eventName } : { eventName: c.eventName, timeout: c.timeout }));
export type WaitForEventConfig = z.output<typeof waitForEventConfig>;

/**
 * CONDITION: `{ field, operator, value?, unit? }`, `field` as services/automation/conditionStepField.ts
 * reads it, `unit` only with `within` / `olderThan`. The field's namespace is checked here; the
 * operator and value by the condition tree's own rules, on the tree field the step field stands for.
 */
export const conditionConfig = z
  .object({
    field: text('field').max(STEP_CONFIG_LIMITS.conditionField, `field must be at most ${STEP_CONFIG_LIMITS.conditionField} characters`),
    operator: z.enum(CONDITION_STEP_OPERATORS as [Operator, ...Operator[]], {
      errorMap: () => ({ message: `operator must be one of ${CONDITION_STEP_OPERATORS.join(', ')}` }),
    }),
    value: z.unknown().optional(),
    unit: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    const parsed = parseConditionStepField(c.field);
    if (!parsed) {
      ctx.addIssue({ code: 'custom', path: ['field'], message: CONDITION_STEP_FIELD_HELP });
      return;
    }
    const filter: Record<string, unknown> = { field: parsed.treeField, operator: c.operator };
    if (c.value !== undefined) filter.value = c.value;
    if (c.unit !== undefined) filter.unit = c.unit;
    for (const issue of conditionTreeIssues({ logic: 'AND', groups: [{ filters: [filter] }] })) {
      const last = issue.path[issue.path.length - 1];
      const path = last === 'field' ? ['field'] : typeof last === 'string' ? [last] : [];
      ctx.addIssue({ code: 'custom', path, message: issue.message.replace(parsed.treeField, c.field), params: { code: issue.code } });
    }
  })
  .transform((c) => ({
    field: c.field,
    operator: c.operator,
    ...(c.value !== undefined ? { value: c.value } : {}),
    ...(c.unit !== undefined ? { unit: c.unit } : {}),
  }));
export type ConditionConfig = z.output<typeof conditionConfig>;

/** WEBHOOK: `method` stored always (POST by default); `body` a string or JSON, its strings templated when the step runs. */
export const webhookConfig = z
  .object({
    url: text('url')
      .trim()
      .max(STEP_CONFIG_LIMITS.webhookUrl, `url must be at most ${STEP_CONFIG_LIMITS.webhookUrl} characters`)
      .superRefine((url, ctx) => {
        const problem = webhookUrlProblem(url);
        if (problem) ctx.addIssue({ code: 'invalid_string', validation: 'url', message: problem });
      }),
    method: z
      .string({ invalid_type_error: 'method must be a string' })
      .transform((m) => m.toUpperCase())
      .pipe(enumOf('method', WEBHOOK_METHODS))
      .default('POST'),
    headers: z
      .record(
        text('header value')
          .max(STEP_CONFIG_LIMITS.webhookHeaderValue, `Header values are at most ${STEP_CONFIG_LIMITS.webhookHeaderValue} characters`)
          .refine((v) => !/[\r\n\u0000]/.test(v), 'Header values must not contain CR, LF or NUL'),
        { invalid_type_error: 'headers must be an object of header names and string values' },
      )
      .superRefine((headers, ctx) => {
        const names = Object.keys(headers);
        if (names.length > STEP_CONFIG_LIMITS.webhookHeaders)
          ctx.addIssue({
            code: 'too_big',
            type: 'array',
            maximum: STEP_CONFIG_LIMITS.webhookHeaders,
            inclusive: true,
            message: `At most ${STEP_CONFIG_LIMITS.webhookHeaders} headers`,
          });
        const seen = new Set<string>();
        for (const name of names) {
          if (!WEBHOOK_HEADER_NAME.test(name) || name.length > STEP_CONFIG_LIMITS.webhookHeaderName) {
            ctx.addIssue({
              code: 'custom',
              path: [name],
              message: `Header names are 1-${STEP_CONFIG_LIMITS.webhookHeaderName} token characters (letters, digits, - and the like; no spaces, colons, CR or LF)`,
            });
          } else if (RESERVED_WEBHOOK_HEADERS.has(name.toLowerCase())) {
            ctx.addIssue({ code: 'custom', path: [name], message: `The ${name} header is set by Mailroom itself` });
          } else if (seen.has(name.toLowerCase())) {
            ctx.addIssue({ code: 'custom', path: [name], message: `The ${name} header is given twice (header names ignore case)` });
          }
          seen.add(name.toLowerCase());
        }
      })
      .optional(),
    body: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    if (c.body === undefined || c.body === null) return;
    if (c.method === 'GET') {
      ctx.addIssue({ code: 'custom', path: ['body'], message: 'A GET request carries no body' });
      return;
    }
    if (typeof c.body !== 'string' && (typeof c.body !== 'object' || c.body === null)) {
      ctx.addIssue({
        code: 'invalid_type',
        expected: 'object',
        received: typeof c.body as 'string',
        path: ['body'],
        message: 'body must be a string or a JSON object or array',
      });
      return;
    }
    const problem = findJsonProblem(c.body, { prefix: 'body' });
    if (problem) {
      ctx.addIssue({
        code: 'custom',
        path: problem.path.split('.').slice(1).length ? ['body', ...problem.path.split('.').slice(1)] : ['body'],
        message: problem.message,
      });
      return;
    }
    const size = Buffer.byteLength(typeof c.body === 'string' ? c.body : JSON.stringify(c.body), 'utf8');
    if (size > STEP_CONFIG_LIMITS.webhookBodyBytes) {
      ctx.addIssue({
        code: 'too_big',
        type: 'string',
        maximum: STEP_CONFIG_LIMITS.webhookBodyBytes,
        inclusive: true,
        path: ['body'],
        message: `body is at most ${STEP_CONFIG_LIMITS.webhookBodyBytes / 1024} KB`,
      });
    }
  })
  .transform((c) => ({
    url: c.url,
    method: c.method,
    ...(c.headers && Object.keys(c.headers).length ? { headers: c.headers } : {}),
    ...(c.body !== undefined && c.body !== null ? { body: c.body } : {}),
  }));
export type WebhookConfig = z.output<typeof webhookConfig>;

/**
 * UPDATE_CONTACT: `updates` obey the contact data rules (sizes, keys, text PostgreSQL can store);
 * reserved keys are dropped silently, as on every other write path. `null` will delete a key and
 * `""` leave it as it is, when the step runs.
 */
export const updateContactConfig = z
  .object({
    updates: contactData.optional(),
    subscriptionAction: enumOf('subscriptionAction', SUBSCRIPTION_ACTIONS).default('none'),
  })
  .transform((c) => {
    const updates: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(c.updates ?? {})) {
      if (!RESERVED_DATA_KEYS.has(key)) Object.defineProperty(updates, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return { updates, subscriptionAction: c.subscriptionAction };
  });
export type UpdateContactConfig = z.output<typeof updateContactConfig>;

export const exitConfig = z
  .object({
    reason: optional(
      text('reason')
        .refine((s) => !CONTROL.test(s), 'reason must not contain line breaks or other control characters')
        .transform((s) => s.trim())
        .pipe(z.string().max(STEP_CONFIG_LIMITS.exitReason, `reason must be at most ${STEP_CONFIG_LIMITS.exitReason} characters`)),
    ),
  })
  .transform((c) => (c.reason ? { reason: c.reason } : {}));
export type ExitConfig = z.output<typeof exitConfig>;

/** The config schema of each kind a client may add. */
export const STEP_CONFIG_SCHEMAS: Record<AddableStepType, z.ZodTypeAny> = {
  SEND_EMAIL: sendEmailConfig,
  DELAY: delayConfig,
  WAIT_FOR_EVENT: waitForEventConfig,
  CONDITION: conditionConfig,
  WEBHOOK: webhookConfig,
  UPDATE_CONTACT: updateContactConfig,
  EXIT: exitConfig,
};

// ---------------------------------------------------------------------------------------------
// Reading a stored config when its step runs

/** A step whose config cannot run: the step (and the execution) fail with this message. */
export class StepConfigError extends Error {}

/** DELAY `{ amount, unit }`: milliseconds; fractions of a unit are allowed (0.1 minute = 6 s). */
export function delayMs(config: Record<string, unknown>): number {
  const amount = config.amount;
  const unit = (config.unit ?? 'minutes') as string;
  if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0) throw new StepConfigError('DELAY needs a positive amount');
  if (!(DELAY_UNITS as readonly string[]).includes(unit))
    throw new StepConfigError(`DELAY unit must be minutes, hours or days, not ${String(unit).slice(0, 40)}`);
  const ms = delayMilliseconds({ amount, unit: unit as DelayUnit });
  if (ms > MAX_DELAY_MS) throw new StepConfigError('DELAY may wait at most 365 days');
  return Math.max(ms, 1);
}

/** WAIT_FOR_EVENT `{ eventName, timeout? }` (timeout in seconds, at most 365 days). */
export function waitForEvent(config: Record<string, unknown>): { eventName: string; timeoutMs: number | null } {
  const eventName = config.eventName;
  if (typeof eventName !== 'string' || !eventName.trim()) throw new StepConfigError('WAIT_FOR_EVENT needs an eventName');
  const timeout = config.timeout;
  if (timeout === undefined || timeout === null) return { eventName, timeoutMs: null };
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0)
    throw new StepConfigError('WAIT_FOR_EVENT timeout must be a positive number of seconds');
  const timeoutMs = Math.round(timeout * 1000);
  if (timeoutMs > MAX_DELAY_MS) throw new StepConfigError('WAIT_FOR_EVENT timeout may be at most 365 days');
  return { eventName, timeoutMs: Math.max(timeoutMs, 1) };
}

/** EXIT `{ reason? }`: the reason recorded on the execution. */
export function exitReason(config: Record<string, unknown>): string {
  return typeof config.reason === 'string' && config.reason.trim() ? config.reason.trim() : 'Reached an EXIT step';
}

/** UPDATE_CONTACT's `subscriptionAction` (none when absent). */
export function subscriptionAction(config: Record<string, unknown>): SubscriptionAction {
  const action = config.subscriptionAction ?? 'none';
  if (!(SUBSCRIPTION_ACTIONS as readonly unknown[]).includes(action))
    throw new StepConfigError(`UPDATE_CONTACT subscriptionAction must be ${SUBSCRIPTION_ACTIONS.slice(0, -1).join(', ')} or ${SUBSCRIPTION_ACTIONS.at(-1)}`);
  return action as SubscriptionAction;
}
