import type { components } from '../../../client/mailroomClient';
import { formatDateTime } from '../components/format';

type ActivityItem = components['schemas']['ActivityItem'];

const TYPE_LABELS: Record<ActivityItem['type'], string> = {
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

/** The feed's latest items as a table; `labelledBy` names the scrolling box (narrow screens scroll it sideways, by keyboard too). */
export function RecentActivity({ items, labelledBy }: { items: ActivityItem[]; labelledBy: string }) {
  if (items.length === 0) {
    return <p className="empty">Nothing has happened in this project yet. Send an email or track an event, and it shows here.</p>;
  }
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
