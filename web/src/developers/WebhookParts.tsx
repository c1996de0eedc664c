import { endpointStateText, MESSAGE_STATUS_LABELS, type WebhookEndpoint, type WebhookMessageStatus } from './webhooksApi';

/** An endpoint's patterns as code, one chip each; `*` said in words too. */
export function EndpointEvents({ events }: { events: string[] }) {
  return (
    <ul className="wh-events">
      {events.map((pattern) => (
        <li key={pattern}>
          <code>{pattern}</code>
          {pattern === '*' ? <span className="wh-events-note"> (every event)</span> : null}
        </li>
      ))}
    </ul>
  );
}

/** "Enabled", or "Disabled" and why (unless a notice beside it says why): in words, the badge's colour only repeats them. */
export function EndpointState({ endpoint, withReason = true }: { endpoint: Pick<WebhookEndpoint, 'enabled' | 'disabledReason'>; withReason?: boolean }) {
  const { label, reason } = endpointStateText(endpoint);
  return (
    <span className="wh-state">
      <span className={endpoint.enabled ? 'badge badge-success' : 'badge badge-warning'}>{label}</span>
      {reason && withReason ? <span className="wh-state-reason">{reason}</span> : null}
    </span>
  );
}

const STATUS_BADGES: Record<WebhookMessageStatus, string> = { PENDING: 'badge badge-pending', SUCCEEDED: 'badge badge-success', FAILED: 'badge badge-danger' };

export function MessageStatus({ status }: { status: WebhookMessageStatus }) {
  return <span className={STATUS_BADGES[status]}>{MESSAGE_STATUS_LABELS[status]}</span>;
}
