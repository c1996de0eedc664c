import { useId } from 'react';
import { useFieldArray, useForm, useWatch } from 'react-hook-form';
import { zodResolver } from '@hookform/resolvers/zod';
import { z } from 'zod';
import { emailAddress } from '../../../shared/zodFields';
import { ApiError } from '../api/client';
import { TextField } from '../components/TextField';
import { ErrorNotice } from '../components/ErrorNotice';
import { dataFromRows, VALUE_TYPE_OPTIONS, type DataRow, type ValueType } from './dataFields';

/** What the form edits; `data` as rows (dataFields.ts), turned into the API's `data` on submit. */
export interface ContactFormValues {
  email: string;
  subscribed: boolean;
  data: DataRow[];
}

export interface ContactBody {
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

const formSchema = z.object({
  // The API's own rule for addresses (shared/zodFields.ts), kept as typed: the API lower-cases it.
  email: z.string().superRefine((value, ctx) => {
    const checked = emailAddress.safeParse(value);
    if (!checked.success) ctx.addIssue({ code: 'custom', message: checked.error.issues[0]?.message ?? 'Invalid email address' });
  }),
  subscribed: z.boolean(),
  data: z.array(z.object({ key: z.string(), value: z.string(), type: z.enum(['text', 'number', 'boolean', 'json']) })),
});

const EMPTY_ROW: DataRow = { key: '', value: '', type: 'text' };

interface ContactFormProps {
  defaultValues: ContactFormValues;
  /** The contact's data as stored, when editing: keys removed from the form are deleted. */
  original?: Record<string, unknown>;
  submitLabel: string;
  busy: boolean;
  error: unknown;
  onSubmit: (body: ContactBody) => void;
  onCancel?: () => void;
}

/** Email, Subscribed and the data fields as key/value rows: the form of a new contact and of an edit. */
export function ContactForm({ defaultValues, original, submitLabel, busy, error, onSubmit, onCancel }: ContactFormProps) {
  const { register, handleSubmit, control, setError, formState } = useForm<ContactFormValues>({
    resolver: zodResolver(formSchema),
    defaultValues: { ...defaultValues, data: defaultValues.data.length > 0 ? defaultValues.data : [EMPTY_ROW] },
  });
  const rows = useFieldArray({ control, name: 'data' });
  const subscribedId = useId();
  const dataHeadingId = useId();

  function submit(values: ContactFormValues) {
    const result = dataFromRows(values.data, original);
    if ('errors' in result) {
      for (const rowError of result.errors) setError(`data.${rowError.index}.${rowError.field}`, { type: 'rows', message: rowError.message });
      return;
    }
    onSubmit({ email: values.email.trim(), subscribed: values.subscribed, data: result.data });
  }

  // The API's field errors: `email`, or a data key's (`data.<key>`) on its row.
  const apiFieldErrors = error instanceof ApiError ? error.fieldErrors : [];
  const emailError = formState.errors.email?.message ?? apiFieldErrors.find((e) => e.field === 'email')?.message;
  const values = useWatch({ control, name: 'data' });

  return (
    <form className="form contact-form" noValidate onSubmit={(event) => void handleSubmit(submit)(event)}>
      <TextField label="Email" type="email" autoComplete="off" error={emailError} {...register('email')} />
      <div className="checkbox-field">
        <input id={subscribedId} type="checkbox" {...register('subscribed')} />
        <label htmlFor={subscribedId}>Subscribed</label>
        <span className="muted">Receives campaigns; transactional mail is sent either way.</span>
      </div>
      <fieldset className="data-rows" aria-labelledby={dataHeadingId}>
        <legend id={dataHeadingId}>Data</legend>
        <p className="field-hint">Values for templates and segments, such as a first name or a plan. A field left empty is removed.</p>
        {rows.fields.length > 0 ? (
          <div className="data-row data-row-head" aria-hidden="true">
            <span>Key</span>
            <span>Value</span>
            <span>Type</span>
            <span />
          </div>
        ) : null}
        {rows.fields.map((field, index) => {
          const n = index + 1;
          const keyError = formState.errors.data?.[index]?.key?.message;
          const rowKey = values[index]?.key.trim();
          const valueError =
            formState.errors.data?.[index]?.value?.message ?? (rowKey ? apiFieldErrors.find((e) => e.field === `data.${rowKey}`)?.message : undefined);
          const type: ValueType = values[index]?.type ?? 'text';
          return (
            <div className="data-row" key={field.id}>
              <div className="field">
                <label className="visually-hidden" htmlFor={`${field.id}-key`}>{`Key ${n}`}</label>
                <input
                  id={`${field.id}-key`}
                  autoComplete="off"
                  placeholder="firstName"
                  aria-invalid={keyError ? true : undefined}
                  aria-describedby={keyError ? `${field.id}-key-error` : undefined}
                  {...register(`data.${index}.key`)}
                />
                {keyError ? (
                  <p id={`${field.id}-key-error`} className="field-error">
                    {keyError}
                  </p>
                ) : null}
              </div>
              <div className="field">
                <label className="visually-hidden" htmlFor={`${field.id}-value`}>{`Value ${n}`}</label>
                <input
                  id={`${field.id}-value`}
                  autoComplete="off"
                  placeholder={type === 'number' ? '42' : type === 'boolean' ? 'true or false' : type === 'json' ? '["a", "b"]' : 'Ada'}
                  aria-invalid={valueError ? true : undefined}
                  aria-describedby={valueError ? `${field.id}-value-error` : undefined}
                  {...register(`data.${index}.value`)}
                />
                {valueError ? (
                  <p id={`${field.id}-value-error`} className="field-error">
                    {valueError}
                  </p>
                ) : null}
              </div>
              <div className="field">
                <label className="visually-hidden" htmlFor={`${field.id}-type`}>{`Type ${n}`}</label>
                <select id={`${field.id}-type`} {...register(`data.${index}.type`)}>
                  {VALUE_TYPE_OPTIONS.map((option) => (
                    <option key={option.value} value={option.value}>
                      {option.label}
                    </option>
                  ))}
                </select>
              </div>
              <button type="button" className="button button-quiet button-small" aria-label={`Remove field ${n}`} onClick={() => rows.remove(index)}>
                Remove
              </button>
            </div>
          );
        })}
        <div>
          <button type="button" className="button button-small" onClick={() => rows.append(EMPTY_ROW)}>
            Add field
          </button>
        </div>
      </fieldset>
      {error ? <ErrorNotice error={error} /> : null}
      <div className="form-actions">
        <button type="submit" className="button button-primary" disabled={busy} aria-busy={busy || undefined}>
          {submitLabel}
        </button>
        {onCancel ? (
          <button type="button" className="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}
