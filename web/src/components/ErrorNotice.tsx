import { ApiError } from '../api/client';

/** An error as the user should see it: the API's message, and the request id to quote when asking for help. */
export function ErrorNotice({ error, title }: { error: unknown; title?: string }) {
  const message = error instanceof Error ? error.message : 'Something went wrong.';
  const requestId = error instanceof ApiError ? error.requestId : undefined;
  return (
    <div className="notice notice-error" role="alert">
      {title ? <p className="notice-title">{title}</p> : null}
      <p>{message}</p>
      {requestId ? (
        <p className="notice-meta">
          Request ID: <code>{requestId}</code>
        </p>
      ) : null}
    </div>
  );
}
