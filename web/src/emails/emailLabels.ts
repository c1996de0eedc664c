import type { components } from '../../../client/mailroomClient';

export type Email = components['schemas']['Email'];

/** Every status and source in words; typed by the API's own answer, so a new value fails the dashboard's build until it is named. */
export const STATUS_LABELS: Record<Email['status'], string> = {
  QUEUED: 'Queued',
  SENDING: 'Sending',
  SENT: 'Sent',
  DELIVERED: 'Delivered',
  OPENED: 'Opened',
  CLICKED: 'Clicked',
  BOUNCED: 'Bounced',
  COMPLAINED: 'Complained',
  FAILED: 'Failed',
  SUPPRESSED: 'Suppressed',
  RECEIVED: 'Received',
};

export const SOURCE_LABELS: Record<Email['source'], string> = {
  TRANSACTIONAL: 'Transactional',
  CAMPAIGN: 'Campaign',
  WORKFLOW: 'Workflow',
  INBOUND: 'Received',
};

const GOOD = new Set<Email['status']>(['SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'RECEIVED']);
const BAD = new Set<Email['status']>(['BOUNCED', 'COMPLAINED', 'FAILED', 'SUPPRESSED']);

/** The badge class of a status: its word says it, the colour only repeats it. */
export function statusBadgeClass(status: Email['status']): string {
  return GOOD.has(status) ? 'badge badge-success' : BAD.has(status) ? 'badge badge-danger' : 'badge';
}
