import type { components } from '../../../client/mailroomClient';
import { formatDateTime } from '../components/format';

export type ActivityItem = components['schemas']['ActivityItem'];

/**
 * Each feed type in words, in the order the filter lists them. Keyed by the API's feed types (not
 * all system event names: `email.failed` is none), so a type the feed gains cannot go without words.
 */
export const TYPE_LABELS: Record<ActivityItem['type'], string> = {
  'event.triggered': 'Event',
  'email.sent': 'Email sent',
  'email.suppressed': 'Email suppressed',
  'email.delivered': 'Email delivered',
  'email.opened': 'Email opened',
  'email.clicked': 'Link clicked',
  'email.bounced': 'Email bounced',
  'email.complained': 'Spam complaint',
  'email.received': 'Email received',
  'contact.subscribed': 'Subscribed',
  'contact.unsubscribed': 'Unsubscribed',
  'campaign.scheduled': 'Campaign scheduled',
  'campaign.sent': 'Campaign sent',
  'workflow.started': 'Workflow started',
  'workflow.completed': 'Workflow completed',
};

/** The item's most telling detail: the event's name, the email's subject, the campaign or workflow. */
function detail(item: ActivityItem): string {
  const meta = item.metadata;
  for (const key of ['eventName', 'subject', 'campaignName', 'workflowName']) {
    const value = meta[key];
    if (typeof value === 'string' && value) return value;
  }
  return '';
}

/** Feed items as a table; `labelledBy` names the scrolling box (narrow screens scroll it sideways, by keyboard too). */
export function ActivityTable({ items, labelledBy, empty }: { items: ActivityItem[]; labelledBy: string; empty: string }) {
  if (items.length === 0) return <p className="empty">{empty}</p>;
  return (
    <div className="table-wrap" role="region" aria-labelledby={labelledBy} tabIndex={0}>
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Activity</th>
            <th scope="col">Contact</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {items.map((item) => (
            <tr key={`${item.type}-${item.id}`}>
              <td className="nowrap">{formatDateTime(item.timestamp)}</td>
              <td>{TYPE_LABELS[item.type]}</td>
              <td>{item.contactEmail ?? '—'}</td>
              <td className="truncate">{detail(item) || '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
