import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../contacts/contactRepository';
import { billingUsageRepository, type UsageCategory } from '../billing/billingUsageRepository';
import { executeBound } from '../sql/boundStatement';
import { boundTextArray } from '../sql/boundTextArray';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';

export type { EmailSource, EmailType, EmailStatus } from './emailKinds';
import type { EmailSource, EmailType, EmailStatus } from './emailKinds';

/** An email as accepted, before anything was attempted. */
export interface NewEmail {
  id: string;
  projectId: string;
  /** Null only for mail to an address that is no contact (a campaign's test email). */
  contactId: string | null;
  templateId: string | null;
  campaignId?: string | null;
  workflowExecutionId?: string | null;
  source: EmailSource;
  type: EmailType;
  subject: string;
  fromAddress: string;
  fromName: string | null;
  replyTo: string | null;
  toAddress: string;
  toName: string | null;
  html: string | null;
  text: string | null;
  headers: Record<string, string> | null;
  attachmentSetId: string | null;
  /** QUEUED for delivery, or SUPPRESSED (with `error` saying why) when nothing may be sent. */
  status: 'QUEUED' | 'SUPPRESSED';
  error?: string | null;
  messageId: string;
  deliveryWorkflowId: string | null;
}

export interface EmailRow extends Omit<NewEmail, 'status' | 'error'> {
  status: EmailStatus;
  error: string | null;
  providerMessageId: string | null;
  attempts: number;
  sentAt: Date | null;
  deliveredAt: Date | null;
  openedAt: Date | null;
  clickedAt: Date | null;
  bouncedAt: Date | null;
  complainedAt: Date | null;
  opens: number;
  clicks: number;
  createdAt: Date;
  /** What the last message offered to the relay needs to be rebuilt; null before any was; absent when not read. */
  messageStamp?: StoredMessageStamp | null;
  /** A received email's message (inbound_messages); null for sent mail or once the message row is gone. */
  inboundMessageId?: string | null;
  /** A received email's SPF, DKIM and DMARC verdicts (contract 20). */
  auth?: InboundAuthResults | null;
}

/** Each `pass`, `fail`, `softfail`, `neutral`, `none`, `temperror` or `permerror`, as mailauth computes them. */
export interface InboundAuthResults {
  spf: string;
  dkim: string;
  dmarc: string;
}

export interface EmailAttachment {
  filename: string;
  contentType: string | null;
  contentId: string | null;
  disposition: 'attachment' | 'inline';
  content: Buffer;
}

/**
 * What makes a handed-over message reproducible from its row (mail/mime/messageBuilder.ts
 * `MessageStamp`, repeated here because db/ does not import mail/): kept instead of the bytes.
 */
export interface StoredMessageStamp {
  date: string;
  boundary: string;
  dkimSignature: string | null;
}

/**
 * What one delivery attempt decided for one email. SENT, and FAILED when the relay took the
 * message's data and refused it, carry the stamp of the bytes handed over.
 */
export type DeliveryOutcome =
  | { emailId: string; status: 'SENT'; providerMessageId: string | null; stamp?: StoredMessageStamp }
  | { emailId: string; status: 'RETRY'; error: string }
  | { emailId: string; status: 'FAILED'; error: string; stamp?: StoredMessageStamp | null }
  | { emailId: string; status: 'SUPPRESSED'; error: string };

/**
 * `headers` in the order a row gives them back: jsonb keeps an object's keys shorter first, then
 * byte-wise. Mail built from an email it has in hand (a campaign batch's) must order them so, or
 * the message rebuilt from its row later would not be the one sent.
 */
export function inStoredOrder(headers: Record<string, string> | null): Record<string, string> | null {
  if (!headers) return headers;
  const keys = Object.keys(headers);
  const sorted = [...keys].sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  if (sorted.every((key, i) => key === keys[i])) return headers;
  return Object.fromEntries(sorted.map((key) => [key, headers[key]]));
}

/** An `emails` row as a statement returns it. */
export interface EmailTableRow {
  id: string;
  project_id: string;
  contact_id: string | null;
  template_id: string | null;
  campaign_id: string | null;
  workflow_execution_id: string | null;
  source: EmailSource;
  type: EmailType;
  subject: string;
  from_address: string;
  from_name: string | null;
  reply_to: string | null;
  to_address: string;
  to_name: string | null;
  html: string | null;
  text: string | null;
  /** jsonb, parsed by the driver. */
  headers: Record<string, string> | string | null;
  /** Absent where the statement leaves it out (toEmail then leaves messageStamp out too). */
  message_stamp?: StoredMessageStamp | string | null;
  attachment_set_id: string | null;
  status: EmailStatus;
  error: string | null;
  message_id: string;
  provider_message_id: string | null;
  attempts: number;
  delivery_workflow_id: string | null;
  claimed_by: string | null;
  claimed_until: TimestampText | null;
  sent_at: TimestampText | null;
  delivered_at: TimestampText | null;
  opened_at: TimestampText | null;
  clicked_at: TimestampText | null;
  bounced_at: TimestampText | null;
  complained_at: TimestampText | null;
  opens: number;
  clicks: number;
  created_at: TimestampText;
  updated_at: TimestampText;
  inbound_message_id?: string | null;
  auth?: InboundAuthResults | string | null;
}

export function toEmail(row: EmailTableRow): EmailRow {
  return {
    id: row.id,
    projectId: row.project_id,
    contactId: row.contact_id,
    templateId: row.template_id,
    campaignId: row.campaign_id,
    workflowExecutionId: row.workflow_execution_id,
    source: row.source,
    type: row.type,
    subject: row.subject,
    fromAddress: row.from_address,
    fromName: row.from_name,
    replyTo: row.reply_to,
    toAddress: row.to_address,
    toName: row.to_name,
    html: row.html,
    text: row.text,
    headers: typeof row.headers === 'string' ? (JSON.parse(row.headers) as Record<string, string>) : (row.headers ?? null),
    messageStamp:
      row.message_stamp === undefined
        ? undefined
        : typeof row.message_stamp === 'string'
          ? (JSON.parse(row.message_stamp) as StoredMessageStamp)
          : row.message_stamp,
    attachmentSetId: row.attachment_set_id,
    status: row.status,
    error: row.error,
    messageId: row.message_id,
    providerMessageId: row.provider_message_id,
    attempts: row.attempts,
    deliveryWorkflowId: row.delivery_workflow_id,
    sentAt: dateOrNull(row.sent_at),
    deliveredAt: dateOrNull(row.delivered_at),
    openedAt: dateOrNull(row.opened_at),
    clickedAt: dateOrNull(row.clicked_at),
    bouncedAt: dateOrNull(row.bounced_at),
    complainedAt: dateOrNull(row.complained_at),
    opens: row.opens,
    clicks: row.clicks,
    createdAt: new Date(row.created_at),
    inboundMessageId: row.inbound_message_id ?? null,
    auth: typeof row.auth === 'string' ? (JSON.parse(row.auth) as InboundAuthResults) : (row.auth ?? null),
  };
}

/**
 * A new email as the columns of an `emails` row, for `jsonb_to_recordset` (Knex would expand an
 * array binding): insertMany's and the campaign waves' statements read it, each the columns it names.
 */
export function emailRecord(e: NewEmail) {
  return {
    id: e.id,
    project_id: e.projectId,
    contact_id: e.contactId,
    template_id: e.templateId,
    campaign_id: e.campaignId ?? null,
    workflow_execution_id: e.workflowExecutionId ?? null,
    source: e.source,
    type: e.type,
    subject: e.subject,
    from_address: e.fromAddress,
    from_name: e.fromName,
    reply_to: e.replyTo,
    to_address: e.toAddress,
    to_name: e.toName,
    html: e.html,
    text: e.text,
    headers: e.headers,
    attachment_set_id: e.attachmentSetId,
    status: e.status,
    error: e.error ?? null,
    message_id: e.messageId,
    delivery_workflow_id: e.deliveryWorkflowId,
  };
}

/**
 * The insert of `emails` (insertMany's and insertManyWithinCap's): the rows as one jsonb array of
 * `emailRecord`s, their HTML and text as bound parameters of their own (boundTextArray), in that
 * order after the statement's earlier parameters.
 */
function insertEmailsStatement(emails: NewEmail[]): { sql: string; params: Array<string | null> } {
  const htmls = boundTextArray(emails.map((e) => e.html));
  const texts = boundTextArray(emails.map((e) => e.text));
  return {
    sql: `insert into emails (id, project_id, contact_id, template_id, campaign_id, workflow_execution_id, source, type, subject,
         from_address, from_name, reply_to, to_address, to_name, html, text, headers, attachment_set_id, status, error,
         message_id, delivery_workflow_id)
       select id, project_id, contact_id, template_id, campaign_id, workflow_execution_id, source, type, subject,
         from_address, from_name, reply_to, to_address, to_name, b.html, b.text, headers, attachment_set_id, status, error,
         message_id, delivery_workflow_id
       from jsonb_to_recordset(?::jsonb) as t(position bigint, id uuid, project_id uuid, contact_id uuid, template_id uuid, campaign_id uuid,
         workflow_execution_id uuid, source text, type text, subject text, from_address text, from_name text, reply_to text,
         to_address text, to_name text, headers jsonb, attachment_set_id uuid, status text, error text,
         message_id text, delivery_workflow_id text)
       join unnest(${htmls.sql}, ${texts.sql}) with ordinality as b(html, text, n) on b.n = t.position`,
    params: [
      JSON.stringify(emails.map((e, i) => ({ position: i + 1, ...emailRecord(e), html: undefined, text: undefined }))),
      ...htmls.params,
      ...texts.params,
    ],
  };
}

/** What `mailroom_caps_reached()` raises (Migration20261204000000CapsReachedInStatement). */
const CAPS_REACHED = 'MRCAP';

export const emailRepository = {
  /**
   * Records accepted emails in one statement, QUEUED (or SUPPRESSED) and never attempted. With
   * `skipExistingIds`, an email whose id is already recorded is left out: a workflow step derives
   * its email's id from its position, so a repeated step finds its email instead of recording
   * another. Answers the ids it recorded.
   */
  async insertMany(em: EntityManager, emails: NewEmail[], options: { skipExistingIds?: boolean } = {}): Promise<string[]> {
    if (!emails.length) return [];
    // Bound, not quoted into the SQL: the rows carry every email's HTML and text.
    const insert = insertEmailsStatement(emails);
    const inserted = await executeBound<{ id: string }>(
      em,
      `${insert.sql}
       ${options.skipExistingIds ? 'on conflict (id) do nothing' : ''}
       returning id`,
      insert.params,
    );
    return inserted.map((r) => r.id);
  },

  /**
   * insertMany and the count of `reserve.n` of them against the project's monthly cap in the
   * category, in one statement committed on its own: one round trip where a transaction takes four.
   * False, and nothing recorded or counted, when the cap has no room or this month's counter does
   * not exist yet: the caller then records them in a transaction, which creates the counter and
   * tells which send to refuse (services/sending/deliveryScheduler.ts).
   */
  async insertManyWithinCap(em: EntityManager, emails: NewEmail[], reserve: { projectId: string; category: UsageCategory; n: number }): Promise<boolean> {
    const insert = insertEmailsStatement(emails);
    try {
      await executeBound(
        em,
        `with raised as (${billingUsageRepository.raiseWithinCapSql()} returning 1)
         ${insert.sql}
         where case when (select count(*) from raised) = 1 then true else mailroom_caps_reached() end`,
        [reserve.n, reserve.projectId, reserve.category, reserve.n, ...insert.params],
      );
      return true;
    } catch (err) {
      if ((err as { code?: unknown }).code === CAPS_REACHED) return false;
      throw err;
    }
  },

  async findById(em: EntityManager, projectId: string, id: string): Promise<EmailRow | null> {
    const rows = await queryRows<EmailTableRow>(em, `select * from emails where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toEmail(rows[0]) : null;
  },

  /**
   * Stores one send's attachments once for all its recipients; the emails point at the set.
   * Sets whose emails were never recorded (a request that failed after this) are removed by
   * the hourly cleanup.
   */
  async insertAttachmentSet(em: EntityManager, projectId: string, attachments: EmailAttachment[]): Promise<string> {
    return em.transactional(async (tx) => {
      const [set] = await tx.execute(`insert into email_attachment_sets (project_id) values (?) returning id`, [projectId]);
      for (const [position, a] of attachments.entries()) {
        await tx.execute(
          `insert into email_attachments (set_id, position, filename, content_type, content_id, disposition, content) values (?, ?, ?, ?, ?, ?, ?)`,
          [set.id, position, a.filename, a.contentType, a.contentId, a.disposition, a.content],
        );
      }
      return set.id as string;
    });
  },

  /**
   * Removes the attachment sets older than `minAgeSeconds` that no email still to be delivered
   * (QUEUED, SENDING) points at; answers how many went.
   */
  async deleteUnusedAttachmentSets(em: EntityManager, minAgeSeconds: number): Promise<number> {
    const [row] = await em.execute<Array<{ n: number }>>(
      `with gone as (
         delete from email_attachment_sets s
         where s.created_at < now() - make_interval(secs => ?)
           and not exists (select 1 from emails e where e.attachment_set_id = s.id and e.status in ('QUEUED', 'SENDING'))
         returning 1)
       select count(*)::int as n from gone`,
      [minAgeSeconds],
    );
    return row.n;
  },

  async attachments(em: EntityManager, setId: string): Promise<EmailAttachment[]> {
    const rows = await em.execute(`select * from email_attachments where set_id = ? order by position`, [setId]);
    return rows.map((r: any) => ({
      filename: r.filename,
      contentType: r.content_type,
      contentId: r.content_id,
      disposition: r.disposition,
      content: r.content,
    }));
  },

  /** The addresses among `emails` that the project's suppression list holds. */
  async suppressedAddresses(em: EntityManager, projectId: string, emails: string[]): Promise<Set<string>> {
    if (!emails.length) return new Set();
    // Bound: a campaign batch asks about 500 addresses at once.
    const rows = await executeBound<{ email: string }>(
      em,
      `select email from email_suppressions where project_id = ? and email in (select jsonb_array_elements_text(?::jsonb))`,
      [projectId, JSON.stringify(emails)],
    );
    return new Set(rows.map((r) => r.email));
  },

  /**
   * Takes the emails a delivery attempt may send: QUEUED ones, and SENDING ones this same
   * activity held before a crash (`owner` is stable across an activity's retries) or whose hold
   * expired. Everything else (already sent, failed, or held by another live attempt) is left
   * alone, so a delivery repeated by Temporal never sends an email twice once it is recorded.
   */
  async claimForDelivery(em: EntityManager, ids: string[], owner: string, holdSeconds: number): Promise<EmailRow[]> {
    if (!ids.length) return [];
    const rows = await queryRows<EmailTableRow>(
      em,
      `update emails set status = 'SENDING', attempts = attempts + 1, claimed_by = ?,
         claimed_until = now() + make_interval(secs => ?), updated_at = now()
       where id = any(?::uuid[])
         and (status = 'QUEUED' or (status = 'SENDING' and (claimed_by = ? or claimed_until < now())))
       returning *`,
      [owner, holdSeconds, `{${ids.join(',')}}`, owner],
    );
    return rows.map(toEmail);
  },

  /**
   * Records what delivery attempts decided, in one transaction with the `email.sent` and
   * `email.failed` events. Only emails still SENDING move (feedback that arrived first, such as
   * an SES delivery notice, is never overwritten). Returns the recorded events by project.
   */
  async recordOutcomes(em: EntityManager, outcomes: DeliveryOutcome[]): Promise<Map<string, RecordedEvent[]>> {
    const byProject = new Map<string, RecordedEvent[]>();
    if (!outcomes.length) return byProject;
    const input = outcomes.map((o) => ({
      id: o.emailId,
      status: o.status === 'RETRY' ? 'QUEUED' : o.status,
      error: 'error' in o ? o.error : null,
      provider_message_id: o.status === 'SENT' ? o.providerMessageId : null,
      message_stamp: o.status === 'SENT' || o.status === 'FAILED' ? (o.stamp ?? null) : null,
    }));
    // One statement: atomic without a transaction of its own (two round trips fewer per wave).
    // Bound: each SENT outcome carries its ~500-byte stamp, which em.execute would quote into the text.
    const rows = await executeBound<{ id: string; project_id: string; contact_id: string; name: string; created_at: Date | string }>(
      em,
      `with input as (
         select * from jsonb_to_recordset(?::jsonb) as t(id uuid, status text, error text, provider_message_id text, message_stamp jsonb)
       ),
       moved as (
         -- Feedback that beat this write (an SES delivery notice, an open) already moved the
         -- status forward: keep it, and still record when the mail left and its email.sent.
         update emails e set
           status = case when e.status = 'SENDING' then i.status else e.status end,
           error = case when e.status = 'SENDING' then i.error else e.error end,
           provider_message_id = coalesce(i.provider_message_id, e.provider_message_id),
           sent_at = case when i.status = 'SENT' then coalesce(e.sent_at, now()) else e.sent_at end,
           -- The message this attempt handed over (the last one offered is the one to show).
           message_stamp = coalesce(i.message_stamp, e.message_stamp),
           claimed_by = null, claimed_until = null, updated_at = now()
         from input i
         where e.id = i.id
           and (e.status = 'SENDING'
                or (i.status = 'SENT' and e.sent_at is null and e.status in ('DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED')))
         returning e.id, e.project_id, e.contact_id, e.subject, e.template_id, e.campaign_id, e.source, e.created_at, i.status as outcome, i.error as outcome_error
       ),
       -- An email that ends FAILED or SUPPRESSED no longer counts against its monthly cap.
       released as (${billingUsageRepository.releaseSql(`(select project_id, source, created_at from moved where outcome in ('FAILED', 'SUPPRESSED')) ended`)}),
       recorded as (
         insert into events (project_id, contact_id, name, source, email_id, data)
         select m.project_id, m.contact_id,
                case m.outcome when 'SENT' then 'email.sent' else 'email.failed' end,
                'SYSTEM', m.id,
                jsonb_strip_nulls(jsonb_build_object('emailId', m.id, 'subject', m.subject, 'templateId', m.template_id,
                  'campaignId', m.campaign_id, 'error', case when m.outcome = 'FAILED' then m.outcome_error end))
         from moved m
         where m.outcome in ('SENT', 'FAILED') and m.contact_id is not null
         returning id, project_id, contact_id, name, created_at
       )
       select * from recorded`,
      [JSON.stringify(input)],
    );
    for (const r of rows) {
      const list = byProject.get(r.project_id) ?? [];
      list.push({ id: r.id, name: r.name, contactId: r.contact_id, createdAt: new Date(r.created_at) });
      byProject.set(r.project_id, list);
    }
    return byProject;
  },

  /** Ends the emails a delivery gave up on (its retries spent): FAILED with their last error, and `email.failed`. */
  async failQueued(em: EntityManager, ids: string[], reason: string): Promise<Map<string, RecordedEvent[]>> {
    if (!ids.length) return new Map();
    // Routed through recordOutcomes so the event is written the same way.
    const claimed = await em.execute(
      `update emails set status = 'SENDING', error = coalesce(error, ?) where id = any(?::uuid[]) and status = 'QUEUED' returning id, error`,
      [reason, `{${ids.join(',')}}`],
    );
    return this.recordOutcomes(
      em,
      claimed.map((r: any) => ({
        emailId: r.id,
        status: 'FAILED' as const,
        error: r.error && r.error !== reason ? `${reason}; last error: ${r.error}` : reason,
      })),
    );
  },

  /**
   * Accepted emails no delivery has touched within `olderThanSeconds`, oldest first, with the
   * delivery workflow recorded for them (null when none was): what an API process that died
   * between recording and scheduling leaves behind.
   */
  async findUnattempted(
    em: EntityManager,
    olderThanSeconds: number,
    limit: number,
  ): Promise<Array<{ id: string; projectId: string; deliveryWorkflowId: string | null }>> {
    const rows = await em.execute(
      `select id, project_id, delivery_workflow_id from emails
       -- A campaign's emails belong to its own durable workflow, which a cancel may stop on purpose.
       where status = 'QUEUED' and attempts = 0 and source <> 'CAMPAIGN' and created_at < now() - make_interval(secs => ?)
       order by created_at limit ?`,
      [olderThanSeconds, limit],
    );
    return (rows as any[]).map((r) => ({
      id: r.id as string,
      projectId: r.project_id as string,
      deliveryWorkflowId: (r.delivery_workflow_id as string | null) ?? null,
    }));
  },
};
