import { useId, type ReactNode } from 'react';
import { CopyButton } from '../components/CopyButton';

/**
 * An endpoint's signing secret right after it was made or rotated: the only time it is shown (the
 * API keeps it sealed and answers only its hint afterwards). It lives in the mutation's answer on
 * screen only: nothing writes it to browser storage or to the query cache (contract 21).
 */
export function WebhookSecret({ secret, title, children }: { secret: string; title: string; children?: ReactNode }) {
  const headingId = useId();
  return (
    <section className="card wh-secret" aria-labelledby={headingId}>
      <h2 id={headingId}>{title}</h2>
      <div className="notice notice-warning">
        <p>
          <strong>Copy the signing secret now.</strong> It will not be shown again: Mailroom keeps only its last characters. If it is lost, rotate it.
        </p>
      </div>
      <dl className="key-list">
        <div>
          <dt>Signing secret</dt>
          <dd>
            <code className="key">{secret}</code>
            <CopyButton value={secret} what="signing secret" />
          </dd>
          <dd className="key-use">Give it to your receiver (for example as MAILROOM_WEBHOOK_SECRET) to verify each message’s webhook-signature header.</dd>
        </div>
      </dl>
      {children}
    </section>
  );
}
