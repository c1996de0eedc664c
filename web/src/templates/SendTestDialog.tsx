import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { ApiError, unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { TextField } from '../components/TextField';
import type { Template } from './templatesApi';

interface SendTestDialogProps {
  open: boolean;
  template: Template;
  /** The address offered first (the signed-in user's). */
  defaultEmail: string;
  /** The form holds changes not saved: the test sends the saved template, so say so. */
  unsaved: boolean;
  onSent: (message: string) => void;
  onClose: () => void;
}

/**
 * "Send test": one copy of the saved template to one address (POST /templates/:id/test), through
 * the API's send path, subject "[TEST] …", counted in no contact's history. A modal <dialog>, as
 * ConfirmDialog is.
 */
export function SendTestDialog({ open, template, defaultEmail, unsaved, onSent, onClose }: SendTestDialogProps) {
  const { client } = useCurrentProject();
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [email, setEmail] = useState(defaultEmail);
  const send = useMutation({
    mutationFn: (address: string) => unwrap(client.POST('/templates/{id}/test', { params: { path: { id: template.id } }, body: { email: address } })),
    onSuccess: (result) => {
      onSent(result.message);
      onClose();
    },
  });
  const { reset } = send;

  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      reset();
      dialog.showModal();
    }
    if (!open && dialog.open) dialog.close();
  }, [open, reset]);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    send.mutate(email.trim());
  }
  const fieldError = send.error instanceof ApiError ? send.error.fieldErrors.find((error) => error.field === 'email') : undefined;

  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <h2 id={titleId}>Send a test of {template.name}</h2>
      <form className="form" noValidate onSubmit={submit}>
        <div className="dialog-body">
          <p>
            One copy of the saved template, subject “[TEST] …”, from {template.from}. An address that is a contact gets its data; it counts in no statistics.
          </p>
          {unsaved ? (
            <div className="notice notice-warning">
              <p>Your unsaved changes are not in the test: save first to send them.</p>
            </div>
          ) : null}
        </div>
        <TextField
          label="Email"
          type="email"
          autoComplete="email"
          value={email}
          onChange={(event) => setEmail(event.target.value)}
          error={fieldError?.message}
          required
        />
        {send.error && !fieldError ? <ErrorNotice error={send.error} /> : null}
        <div className="form-actions dialog-actions">
          <button type="button" className="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="button button-primary" disabled={send.isPending || !email.trim()} aria-busy={send.isPending || undefined}>
            Send test
          </button>
        </div>
      </form>
    </dialog>
  );
}
