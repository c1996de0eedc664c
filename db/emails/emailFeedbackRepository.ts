import type { EntityManager } from '@mikro-orm/postgresql';
import { contactRepository, type RecordedEvent } from '../contacts/contactRepository';
import { queryRows } from '../sql/rows';

/**
 * Everything that happens to an email after it left (contract section 9): opens and clicks from
 * the tracking links, and the relay's delivery, bounce and complaint notices. Each write is one
 * transaction that locks the email row first, so concurrent hits and replayed notices are
 * serialised and their effects happen once:
 *
 * - the status only moves forward along QUEUED < SENDING < SENT < DELIVERED < OPENED < CLICKED;
 *   BOUNCED and COMPLAINED override any of those (COMPLAINED also overrides BOUNCED); FAILED and
 *   SUPPRESSED emails (never handed to anyone) keep their status whatever arrives;
 * - `opens` / `clicks` count every hit (scanners and repeats included); `opened_at`,
 *   `clicked_at`, `delivered_at`, `bounced_at`, `complained_at` keep the first time;
 * - `email.*` events are recorded only for the first of each kind, so a replay records nothing.
 *
 * A click counts as an open when no open was seen (the reader's client blocked images): it sets
 * `opened_at`, adds one to `opens` and records `email.opened` before `email.clicked`, so
 * automations waiting for an open are not stuck on readers who click without loading images.
 */

const ORDER = ['QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED'] as const;

/** The status `current` moves to when `target` happens, following the rules above. */
export function nextStatus(current: string, target: 'DELIVERED' | 'OPENED' | 'CLICKED' | 'BOUNCED' | 'COMPLAINED'): string {
  const rank = (ORDER as readonly string[]).indexOf(current);
  if (target === 'BOUNCED') return rank >= 0 ? 'BOUNCED' : current;
  if (target === 'COMPLAINED') return rank >= 0 || current === 'BOUNCED' ? 'COMPLAINED' : current;
  return rank >= 0 && rank < ORDER.indexOf(target) ? target : current;
}

interface LockedEmail {
  id: string;
  project_id: string;
  contact_id: string | null;
  subject: string;
  template_id: string | null;
  campaign_id: string | null;
  status: string;
  to_address: string;
  opened_at: Date | null;
  clicked_at: Date | null;
  delivered_at: Date | null;
  bounced_at: Date | null;
  complained_at: Date | null;
}

export interface FeedbackOutcome {
  projectId: string;
  emailId: string;
  status: string;
  /** Committed events to pass to eventTriggers (email.* and any contact.unsubscribed). */
  events: RecordedEvent[];
}

async function lockEmail(tx: EntityManager, emailId: string): Promise<LockedEmail | null> {
  const [row] = await tx.execute<LockedEmail[]>(
    `select id, project_id, contact_id, subject, template_id, campaign_id, status, to_address,
            opened_at, clicked_at, delivered_at, bounced_at, complained_at
       from emails where id = ? for update`,
    [emailId],
  );
  return row ?? null;
}

/** The data of an `email.*` event about the email row `e`, as SQL (jsonb). */
const emailEventData = (e: string) =>
  `jsonb_build_object('emailId', ${e}.id, 'subject', ${e}.subject, 'templateId', ${e}.template_id, 'campaignId', ${e}.campaign_id)`;

/** Records `email.<kind>` for the email's contact (an email without a contact gets no event). */
async function recordEmailEvent(tx: EntityManager, email: LockedEmail, name: string, extra: Record<string, unknown> = {}): Promise<RecordedEvent[]> {
  if (!email.contact_id) return [];
  const rows = await tx.execute<Array<{ id: string; contact_id: string; name: string; created_at: Date }>>(
    `insert into events (project_id, contact_id, name, source, data, email_id)
     select e.project_id, e.contact_id, ?, 'SYSTEM', ${emailEventData('e')} || ?::jsonb, e.id from emails e where e.id = ?
     returning id, contact_id, name, created_at`,
    [name, JSON.stringify(extra), email.id],
  );
  return rows.map((r) => ({ id: r.id, contactId: r.contact_id, name: r.name, createdAt: new Date(r.created_at) }));
}

/**
 * nextStatus as SQL, for a forward target, over the status expression `current`: the same rule
 * from the same ORDER, for the hits recorded in one statement.
 */
function nextForwardStatusSql(current: string, target: 'OPENED' | 'CLICKED'): string {
  const earlier = ORDER.slice(0, ORDER.indexOf(target))
    .map((status) => `'${status}'`)
    .join(', ');
  return `case when ${current} in (${earlier}) then '${target}' else ${current} end`;
}

/**
 * An open or a click in one autocommitted statement: lock the email row, move it, and record the
 * first-time events, so the transaction (and the rollup counter rows its triggers write) lasts no
 * longer than the statement, instead of a round trip per step.
 */
async function recordHit(em: EntityManager, emailId: string, hit: { kind: 'open' } | { kind: 'click'; url: string }): Promise<FeedbackOutcome | null> {
  const click = hit.kind === 'click';
  const set = click
    ? `clicks = e.clicks + 1, clicked_at = coalesce(e.clicked_at, now()), opens = e.opens + (was.opened_at is null)::int,
       opened_at = coalesce(e.opened_at, now()), status = ${nextForwardStatusSql('was.status', 'CLICKED')}`
    : `opens = e.opens + 1, opened_at = coalesce(e.opened_at, now()), status = ${nextForwardStatusSql('was.status', 'OPENED')}`;
  // A click counts as the open when none was seen; email.opened is recorded before email.clicked.
  const due = click
    ? `(values (1, 'email.opened', '{}'::jsonb, m.was_opened), (2, 'email.clicked', jsonb_build_object('url', ?::text), m.was_clicked))`
    : `(values (1, 'email.opened', '{}'::jsonb, m.was_opened))`;
  const [row] = await em.execute<
    Array<{ project_id: string; status: string; events: Array<{ id: string; contactId: string; name: string; createdAt: string }> }>
  >(
    `with was as (select id, status, opened_at, clicked_at from emails where id = ? for update),
     moved as (
       update emails e set ${set}, updated_at = now() from was where e.id = was.id
       returning e.id, e.project_id, e.contact_id, e.subject, e.template_id, e.campaign_id, e.status,
                 was.opened_at is not null as was_opened, was.clicked_at is not null as was_clicked
     ),
     recorded as (
       insert into events (project_id, contact_id, name, source, data, email_id)
       select m.project_id, m.contact_id, v.name, 'SYSTEM', ${emailEventData('m')} || v.extra, m.id
         from moved m cross join lateral ${due} as v(n, name, extra, done)
        where not v.done and m.contact_id is not null
        order by v.n
       returning id, contact_id, name, created_at, seq
     )
     select m.project_id, m.status,
            (select coalesce(json_agg(json_build_object('id', r.id, 'contactId', r.contact_id, 'name', r.name, 'createdAt', r.created_at) order by r.seq), '[]')
               from recorded r) as events
       from moved m`,
    click ? [emailId, hit.url] : [emailId],
  );
  if (!row) return null;
  return {
    projectId: row.project_id,
    emailId,
    status: row.status,
    events: row.events.map((e) => ({ id: e.id, contactId: e.contactId, name: e.name, createdAt: new Date(e.createdAt) })),
  };
}

/**
 * Unsubscribes the project's contact with this address, if there is one (a bounce or complaint
 * never creates a contact). The row lock keeps a concurrent delete from being undone by the upsert.
 */
async function unsubscribeAddress(tx: EntityManager, projectId: string, address: string, source: string): Promise<RecordedEvent[]> {
  const [existing] = await tx.execute(`select id from contacts where project_id = ? and email = ? for update`, [projectId, address]);
  if (!existing) return [];
  const [result] = await contactRepository.upsertByEmail(
    tx,
    projectId,
    [{ email: address, subscribedIfNew: false, subscribedIfExisting: false, data: { set: {}, unset: [], oneShot: {} } }],
    source,
  );
  return result.events;
}

const normaliseAddress = (address: string) => address.trim().toLowerCase();

export interface BounceNotice {
  /** SES bounceType (Permanent, Transient or Undetermined), or a DSN's as Mailroom classes it. */
  bounceType: string;
  /** SES bounceSubType (General, NoEmail, ...), or a DSN's Status code (5.1.1). */
  bounceSubType?: string;
  /** Addresses SES says bounced, with their diagnostic (SMTP reply) when given. */
  recipients: Array<{ email: string; diagnostic?: string }>;
}

export interface ComplaintNotice {
  recipients: string[];
  feedbackType?: string;
}

/**
 * Whether a notice concerns this email's recipient. A notice naming no recipients concerns it;
 * one naming only other addresses does not: the suppression list must never take addresses the
 * email was not sent to, whatever a notice claims.
 */
function concernsRecipient(email: LockedEmail, recipients: string[]): boolean {
  return recipients.length === 0 || recipients.map(normaliseAddress).includes(normaliseAddress(email.to_address));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The email a Message-ID names, if Mailroom wrote it: every email Mailroom sends carries
 * `<its id@its sending domain>` (services/sending/emailComposer.ts), so the id is read out of the
 * Message-ID and the row found by its primary key, then checked to hold that very Message-ID (with
 * or without angle brackets, as reports quote it). Any other Message-ID names no email of ours
 * (received mail keeps its own, and no report is about it): no index on message_id is needed,
 * which spares every email an index entry (docs/architecture/indexes.md).
 */
function emailNamedByMessageId(messageId: string | undefined): { id: string; forms: [string, string] } | null {
  const bare = messageId?.trim().replace(/^<|>$/g, '').trim();
  if (!bare) return null;
  const at = bare.lastIndexOf('@');
  const id = at > 0 ? bare.slice(0, at) : '';
  if (!UUID.test(id)) return null;
  return { id: id.toLowerCase(), forms: [`<${bare}>`, bare] };
}

export const emailFeedbackRepository = {
  /** A valid open pixel was fetched. Null when the email no longer exists. */
  async recordOpen(em: EntityManager, emailId: string): Promise<FeedbackOutcome | null> {
    return recordHit(em, emailId, { kind: 'open' });
  },

  /** A validly signed click link was followed to `url`. Null when the email no longer exists. */
  async recordClick(em: EntityManager, emailId: string, url: string): Promise<FeedbackOutcome | null> {
    return recordHit(em, emailId, { kind: 'click', url });
  },

  /**
   * The project's sent email (not one it received) that a report by mail names: by its id (the
   * return-path address) or by our Message-ID header, with or without angle brackets. Another
   * project's email is not found: a report can only change the emails of the project it reached.
   */
  async findSentEmailOfProject(
    em: EntityManager,
    projectId: string,
    ids: { emailId?: string; messageId?: string },
  ): Promise<{ id: string; toAddress: string } | null> {
    const found = (row: { id: string; to_address: string } | undefined) => (row ? { id: row.id, toAddress: row.to_address } : null);
    if (ids.emailId) {
      const [row] = await queryRows<{ id: string; to_address: string }>(
        em,
        `select id, to_address from emails where id = ? and project_id = ? and source <> 'INBOUND'`,
        [ids.emailId, projectId],
      );
      return found(row);
    }
    const named = emailNamedByMessageId(ids.messageId);
    if (!named) return null;
    const [row] = await queryRows<{ id: string; to_address: string }>(
      em,
      `select id, to_address from emails where id = ? and message_id in (?, ?) and project_id = ? and source <> 'INBOUND'`,
      [named.id, ...named.forms, projectId],
    );
    return found(row);
  },

  /**
   * The email a relay notice is about: by the relay's own message id (`provider_message_id`),
   * else by our Message-ID header, stored with angle brackets and matched with or without them.
   */
  async findEmailId(em: EntityManager, ids: { providerMessageId?: string; messageId?: string }): Promise<string | null> {
    if (ids.providerMessageId) {
      const [row] = await queryRows<{ id: string }>(em, `select id from emails where provider_message_id = ? limit 1`, [ids.providerMessageId]);
      if (row) return row.id;
    }
    const named = emailNamedByMessageId(ids.messageId);
    if (named) {
      const [row] = await queryRows<{ id: string }>(em, `select id from emails where id = ? and message_id in (?, ?) and source <> 'INBOUND'`, [
        named.id,
        ...named.forms,
      ]);
      if (row) return row.id;
    }
    return null;
  },

  async recordDelivery(em: EntityManager, emailId: string): Promise<FeedbackOutcome | null> {
    return em.transactional(async (tx) => {
      const email = await lockEmail(tx, emailId);
      if (!email) return null;
      const status = nextStatus(email.status, 'DELIVERED');
      await tx.execute(`update emails set delivered_at = coalesce(delivered_at, now()), status = ?, updated_at = now() where id = ?`, [status, emailId]);
      const events = email.delivered_at ? [] : await recordEmailEvent(tx, email, 'email.delivered');
      return { projectId: email.project_id, emailId, status, events };
    });
  },

  /**
   * A bounce, as services/feedback/emailFeedback.ts decided it (`permanent`). A permanent one:
   * BOUNCED, the address suppressed in the email's project (reason BOUNCE), the project's contact
   * with that address unsubscribed, and `email.bounced`. Otherwise only its diagnostic is noted in
   * `error`, with no event.
   */
  async recordBounce(em: EntityManager, emailId: string, notice: BounceNotice, permanent: boolean): Promise<(FeedbackOutcome & { ignored?: string }) | null> {
    const outcome = await em.transactional(async (tx) => {
      const email = await lockEmail(tx, emailId);
      if (!email) return null;
      const base = { projectId: email.project_id, emailId, status: email.status, events: [] as RecordedEvent[] };
      if (
        !concernsRecipient(
          email,
          notice.recipients.map((r) => r.email),
        )
      )
        return { ...base, ignored: 'the bounce names none of the email recipients' };
      const address = normaliseAddress(email.to_address);
      const own = notice.recipients.find((r) => normaliseAddress(r.email) === address);
      const diagnostic = (own?.diagnostic ?? notice.recipients.find((r) => r.diagnostic)?.diagnostic ?? '').slice(0, 1000) || null;
      const kind = [notice.bounceType, notice.bounceSubType].filter(Boolean).join('/');
      const errorText = `${permanent ? 'Bounced' : 'Soft bounce'} (${kind})${diagnostic ? `: ${diagnostic}` : ''}`;

      if (!permanent) {
        await tx.execute(`update emails set error = ?, updated_at = now() where id = ?`, [errorText, emailId]);
        return base;
      }
      const status = nextStatus(email.status, 'BOUNCED');
      await tx.execute(`update emails set status = ?, bounced_at = coalesce(bounced_at, now()), error = ?, updated_at = now() where id = ?`, [
        status,
        errorText,
        emailId,
      ]);
      await tx.execute(
        `insert into email_suppressions (project_id, email, reason, email_id, detail) values (?, ?, 'BOUNCE', ?, ?)
         on conflict (project_id, email) do nothing`,
        [email.project_id, address, emailId, diagnostic],
      );
      const events = email.bounced_at
        ? []
        : await recordEmailEvent(tx, email, 'email.bounced', { bounceType: notice.bounceType, bounceSubType: notice.bounceSubType ?? null, diagnostic });
      // Only the first notice unsubscribes: a replay must not undo a resubscription made since.
      if (!email.bounced_at) events.push(...(await unsubscribeAddress(tx, email.project_id, address, 'bounce')));
      return { ...base, status, events };
    });
    return outcome;
  },

  /** A complaint: COMPLAINED, the address suppressed (reason COMPLAINT), its contact unsubscribed, `email.complained`. */
  async recordComplaint(em: EntityManager, emailId: string, notice: ComplaintNotice): Promise<(FeedbackOutcome & { ignored?: string }) | null> {
    return em.transactional(async (tx) => {
      const email = await lockEmail(tx, emailId);
      if (!email) return null;
      const base = { projectId: email.project_id, emailId, status: email.status, events: [] as RecordedEvent[] };
      if (!concernsRecipient(email, notice.recipients)) return { ...base, ignored: 'the complaint names none of the email recipients' };
      const address = normaliseAddress(email.to_address);
      const status = nextStatus(email.status, 'COMPLAINED');
      await tx.execute(`update emails set status = ?, complained_at = coalesce(complained_at, now()), updated_at = now() where id = ?`, [status, emailId]);
      // A complaint outranks an earlier bounce as the reason an address is suppressed.
      await tx.execute(
        `insert into email_suppressions (project_id, email, reason, email_id, detail) values (?, ?, 'COMPLAINT', ?, ?)
         on conflict (project_id, email) do update set reason = 'COMPLAINT', email_id = excluded.email_id, detail = excluded.detail
         where email_suppressions.reason <> 'COMPLAINT'`,
        [email.project_id, address, emailId, notice.feedbackType ?? null],
      );
      const events = email.complained_at ? [] : await recordEmailEvent(tx, email, 'email.complained', { feedbackType: notice.feedbackType ?? null });
      if (!email.complained_at) events.push(...(await unsubscribeAddress(tx, email.project_id, address, 'complaint')));
      return { ...base, status, events };
    });
  },

  /** The contact a signed page link names, with its project's name; null when it was deleted. */
  async findPageContact(em: EntityManager, contactId: string): Promise<PageContact | null> {
    const [row] = await em.execute(
      `select c.id, c.project_id, c.email, c.subscribed, p.name as project_name
         from contacts c join projects p on p.id = c.project_id where c.id = ?`,
      [contactId],
    );
    return row ? { id: row.id, projectId: row.project_id, email: row.email, subscribed: row.subscribed, projectName: row.project_name } : null;
  },

  /**
   * The unsubscribe / subscribe pages: sets the contact's subscription through the contact upsert
   * (which records contact.subscribed / contact.unsubscribed for a flip). The contact row is
   * locked first, so a contact deleted meanwhile is reported (null) rather than re-created.
   */
  async setPageSubscription(em: EntityManager, contactId: string, subscribed: boolean): Promise<{ contact: PageContact; events: RecordedEvent[] } | null> {
    return em.transactional(async (tx) => {
      const [row] = await tx.execute(`select id, project_id, email from contacts where id = ? for update`, [contactId]);
      if (!row) return null;
      const [result] = await contactRepository.upsertByEmail(
        tx,
        row.project_id,
        [{ email: row.email, subscribedIfNew: subscribed, subscribedIfExisting: subscribed, data: { set: {}, unset: [], oneShot: {} } }],
        'page',
      );
      const contact = await emailFeedbackRepository.findPageContact(tx, contactId);
      return contact ? { contact, events: result.events } : null;
    });
  },
};

export interface PageContact {
  id: string;
  projectId: string;
  email: string;
  subscribed: boolean;
  projectName: string;
}
