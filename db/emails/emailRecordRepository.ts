import type { EntityManager } from '@mikro-orm/postgresql';
import { toEmail, type EmailRow, type EmailTableRow } from './emailRepository';
import { queryRows, type TimestampText } from '../sql/rows';

/** Sources and statuses a filter may name: contract 9's, and INBOUND / RECEIVED for mail in (contract 20). */
export const EMAIL_RECORD_SOURCES = ['TRANSACTIONAL', 'CAMPAIGN', 'WORKFLOW', 'INBOUND'] as const;
export const EMAIL_RECORD_STATUSES = [
  'QUEUED',
  'SENDING',
  'SENT',
  'DELIVERED',
  'OPENED',
  'CLICKED',
  'BOUNCED',
  'COMPLAINED',
  'FAILED',
  'SUPPRESSED',
  'RECEIVED',
] as const;

export interface EmailRecordFilters {
  status?: (typeof EMAIL_RECORD_STATUSES)[number];
  source?: (typeof EMAIL_RECORD_SOURCES)[number];
  contactId?: string;
  campaignId?: string;
  /** Lower-cased by the caller: compared with lower(to_address). */
  to?: string;
}

/** Where a page ended: the last row's created_at to the microsecond (a Date keeps milliseconds), and its id. */
export interface EmailRecordKey {
  t: string;
  id: string;
}

export interface EmailEvent {
  name: string;
  createdAt: Date;
  data: unknown;
}

function known<T extends string>(values: readonly T[], value: T): T {
  if (!values.includes(value)) throw new Error(`not one of ${values.join(', ')}: ${value}`);
  return value;
}

/** Every column of a list row but the content (HTML, text, headers), which a list never shows. */
const LIST_COLUMNS = `id, project_id, contact_id, template_id, campaign_id, workflow_execution_id, source, type, subject,
  from_address, from_name, reply_to, to_address, to_name, attachment_set_id, status, error, message_id, provider_message_id,
  attempts, delivery_workflow_id, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at, opens, clicks, created_at, inbound_message_id, auth,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as key_t`;

/** Reading a project's email records (contract 20): keyset pages newest first, one email, its own events. */
export const emailRecordRepository = {
  async page(
    em: EntityManager,
    projectId: string,
    filters: EmailRecordFilters,
    limit: number,
    after?: EmailRecordKey,
  ): Promise<{ emails: EmailRow[]; hasMore: boolean; last: EmailRecordKey | null }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filters.campaignId) {
      // By the campaign's own index, and the project checked on the campaign: with project_id = ?
      // beside it, the planner walks the project's (project_id, created_at, id) index from the
      // newest email, expecting the campaign's rows spread evenly; an older campaign's lie behind
      // every email sent since. A campaign's emails are all its project's (emails.campaign_id
      // references campaigns, and the composer records a campaign's mail under its project).
      where.push('campaign_id = ?', 'exists (select 1 from campaigns c where c.id = ? and c.project_id = ?)');
      params.push(filters.campaignId, filters.campaignId, projectId);
    } else if (filters.contactId) {
      // By the contact's own index (emails_contact_campaign_unique), sorted after: bounded by the
      // contact's emails. With project_id = ? beside it the planner may walk the project's time
      // index expecting the contact's rows spread evenly, which for a contact whose many emails
      // are all old reads the project's history (77 ms against 10 ms on a million emails). A
      // contact's emails are all its project's (the contact is the project's).
      where.push('contact_id = ?', 'exists (select 1 from contacts c where c.id = ? and c.project_id = ?)');
      params.push(filters.contactId, filters.contactId, projectId);
    } else {
      where.push('project_id = ?');
      params.push(projectId);
    }
    const add = (clause: string, value: unknown) => {
      where.push(clause);
      params.push(value);
    };
    // Written into the statement (from a fixed list): the planner then sees which statuses the
    // partial index emails_project_status_created_index holds, whatever the plan cache does.
    if (filters.status) where.push(`status = '${known(EMAIL_RECORD_STATUSES, filters.status)}'`);
    if (filters.source) add('source = ?', filters.source);
    if (filters.contactId && filters.campaignId) add('contact_id = ?', filters.contactId);
    if (filters.to) add('lower(to_address) = ?', filters.to);
    if (after) {
      where.push('(created_at, id) < (?::timestamptz, ?::uuid)');
      params.push(after.t, after.id);
    }
    params.push(limit + 1);
    // Typed as the whole row, though LIST_COLUMNS leaves the bodies, headers and stamp out:
    // toEmail reads them as undefined there, as it always has, and the list shows none of them.
    const rows = await queryRows<EmailTableRow & { key_t: string }>(
      em,
      `select ${LIST_COLUMNS} from emails where ${where.join(' and ')} order by created_at desc, id desc limit ?`,
      params,
    );
    const hasMore = rows.length > limit;
    const served = rows.slice(0, limit);
    const lastRow = served.at(-1);
    return { emails: served.map(toEmail), hasMore, last: lastRow ? { t: lastRow.key_t, id: lastRow.id } : null };
  },

  /**
   * The email's own events, oldest first. Events are found through their contact (an email's
   * events are its contact's, and events(contact_id, seq) is indexed; email_id is not): no index
   * more to write for every event a campaign records.
   */
  async events(em: EntityManager, email: Pick<EmailRow, 'id' | 'projectId' | 'contactId'>): Promise<EmailEvent[]> {
    if (!email.contactId) return [];
    const rows = await queryRows<{ name: string; created_at: TimestampText; data: Record<string, unknown> | null }>(
      em,
      `select name, created_at, data from events where contact_id = ? and project_id = ? and email_id = ? order by seq`,
      [email.contactId, email.projectId, email.id],
    );
    return rows.map((r) => ({ name: r.name, createdAt: new Date(r.created_at), data: r.data ?? null }));
  },
};
