import { useId, type ComponentProps, type ReactNode } from 'react';

interface TextFieldProps extends ComponentProps<'input'> {
  /** The visible label, naming the field as the API names it in words ("Email", "Name"). */
  label: string;
  /** The field's error (the schema's or the API's message), announced with the field. */
  error?: string;
  /** A line of help under the field. */
  hint?: ReactNode;
}

/** A labelled input with its hint and error tied to it (aria-describedby), for react-hook-form's `register()`. */
export function TextField({ label, error, hint, id, className, ...input }: TextFieldProps) {
  const generatedId = useId();
  const inputId = id ?? generatedId;
  const hintId = `${inputId}-hint`;
  const errorId = `${inputId}-error`;
  const describedBy = [hint ? hintId : null, error ? errorId : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={['field', className].filter(Boolean).join(' ')}>
      <label htmlFor={inputId}>{label}</label>
      <input id={inputId} aria-invalid={error ? true : undefined} aria-describedby={describedBy} {...input} />
      {hint ? (
        <p id={hintId} className="field-hint">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={errorId} className="field-error">
          {error}
        </p>
      ) : null}
    </div>
  );
}
