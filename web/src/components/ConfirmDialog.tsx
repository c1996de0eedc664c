import { useEffect, useId, useRef, type ReactNode } from 'react';

interface ConfirmDialogProps {
  open: boolean;
  title: string;
  /** What happens, in words: the consequence the user confirms. */
  children: ReactNode;
  /** The confirming button's name: the action itself ("Regenerate keys"), never "OK". */
  confirmLabel: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
}

/**
 * A modal confirmation on the browser's own <dialog> (focus moves into it and stays there, Escape
 * cancels, the page behind is inert), so no dialog library is needed for this.
 */
export function ConfirmDialog({ open, title, children, confirmLabel, onConfirm, onCancel, busy = false }: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onCancel();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      <div className="dialog-body">{children}</div>
      <div className="form-actions dialog-actions">
        <button type="button" className="button" onClick={onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" className="button button-danger" onClick={onConfirm} disabled={busy} aria-busy={busy || undefined}>
          {confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
