import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../contacts/contactRepository';
import { emailRecord, toEmail, type EmailRow, type EmailStatus, type EmailTableRow, type NewEmail, type StoredMessageStamp } from '../emails/emailRepository';
import { billingUsageRepository } from '../billing/billingUsageRepository';
import { executeBound } from '../sql/boundStatement';
import { boundTextArray } from '../sql/boundTextArray';
import { queryRows } from '../sql/rows';

/** The month a cap counts in, as billing_usage names it (billingUsageRepository's CURRENT_MONTH). */
const CURRENT_MONTH = `date_trunc('month', now() at time zone 'utc')::date`;

/** One email of a wave about to be recorded: composed, its message built (stamp) or its build refused (failure). */
export interface WaveEmail {
  email: NewEmail;
  /** What reproduces the message built for it; null when the build failed. */
  stamp: StoredMessageStamp | null;
  /** Why the message could not be built (recorded FAILED, never handed over); null when it was built. */
  failure: string | null;
}

/** What the hand-over of a recorded wave did to one email, recorded by the next round. */
export type HandOverOutcome =
  | { emailId: string; status: 'SENT'; providerMessageId: string | null }
  | { emailId: string; status: 'RETRY'; error: string }
  | { emailId: string; status: 'FAILED'; error: string; stamp: StoredMessageStamp | null };

export interface WaveRound {
  campaignId: string;
  projectId: string;
  /** The batch's key (campaignBatchClaims.batchKey) and the attempt that must still own it. */
  batchStart: string;
  attempt: string;
  /** The previous wave's hand-over, recorded by this round (events, corrections). */
  handedOver: HandOverOutcome[];
  /** This wave's emails, to record in their final state; empty for the last round. */
  wave: WaveEmail[];
  /** The last round: the claim is let go (deleted) instead of naming this wave as pending. */
  release: boolean;
  /** The recipient rule's reasons (services/sending/recipientRefusal.ts), written on the SUPPRESSED rows. */
  refusals: { suppressed: string; unsubscribed: string };
}

export interface WaveRoundResult {
  /** The claim was still this attempt's: everything below happened. False: a newer attempt owns the batch, nothing was written. */
  claimed: boolean;
  /** The campaign's state as the statement read it (no wave is recorded unless SENDING). */
  state: { state: 'SENDING' } | { state: 'NOT_SENDING' } | { state: 'PROJECT_DISABLED'; disabledReason: string | null };
  /** This wave's emails the statement recorded, with their status (SENT, SUPPRESSED, FAILED). */
  recorded: Array<{ id: string; status: EmailStatus }>;
  /** Emails of the wave the monthly campaigns cap had no room for (not recorded), and the cap. */
  beyondCap: number;
  capLimit: number | null;
  /** False when this month's counter row did not exist yet: nothing sendable was recorded (create it, then repeat). */
  counted: boolean;
  /** The events this round recorded, by project (email.sent, email.failed). */
  events: Map<string, RecordedEvent[]>;
}

interface RoundRow {
  claimed: number;
  campaign_status: string | null;
  disabled: boolean | null;
  disabled_reason: string | null;
  counted: boolean;
  cap_limit: string | number | null;
  beyond_cap: number;
  recorded: Array<{ id: string; status: EmailStatus }>;
  events: Array<{ id: string; project_id: string; contact_id: string; name: string; created_at: string }>;
}

const uuidArray = (ids: readonly string[]) => `{${ids.join(',')}}`;

/**
 * The SQL of a campaign's waves under a claim per batch (campaign_batch_claims): taking a batch,
 * the one statement per wave that records it in its final state, reading back a wave whose
 * hand-over is not known. The rules behind them: services/campaigns/campaignWaves.ts.
 */
export const campaignWaveRepository = {
  /**
   * Takes the batch for `attempt` (a first attempt creates its claim, a retried one replaces the
   * superseded attempt's) and answers the wave that attempt recorded and may not have handed over,
   * and whether there was such an attempt (the row existed: `xmax` is set by the conflict's update).
   */
  async takeBatch(em: EntityManager, campaignId: string, batchStart: string, attempt: string): Promise<{ pendingWave: string[]; retried: boolean }> {
    const [row] = await queryRows<{ pending_wave: string[] | string; retried: boolean }>(
      em,
      `insert into campaign_batch_claims (campaign_id, batch_start, attempt) values (?, ?, ?)
       on conflict (campaign_id, batch_start) do update set attempt = excluded.attempt, updated_at = now()
       returning pending_wave, xmax <> '0'::xid as retried`,
      [campaignId, batchStart, attempt],
    );
    return { pendingWave: uuidList(row.pending_wave), retried: row.retried };
  },

  /**
   * Claims of the campaign no attempt has written for `staleSeconds` (their worker is gone),
   * taken for `attempt` (the end of the send), with their pending waves; and how many claims are
   * still fresh (batches still running).
   */
  async takeStaleBatches(
    em: EntityManager,
    campaignId: string,
    attempt: string,
    staleSeconds: number,
  ): Promise<{ taken: Array<{ batchStart: string; pendingWave: string[] }>; running: number }> {
    const taken = await queryRows<{ batch_start: string; pending_wave: string[] | string }>(
      em,
      `update campaign_batch_claims set attempt = ?, updated_at = now()
       where campaign_id = ? and updated_at < now() - make_interval(secs => ?)
       returning batch_start, pending_wave`,
      [attempt, campaignId, staleSeconds],
    );
    const [fresh] = await queryRows<{ n: number }>(em, `select count(*)::int as n from campaign_batch_claims where campaign_id = ? and attempt <> ?`, [
      campaignId,
      attempt,
    ]);
    return { taken: taken.map((r) => ({ batchStart: r.batch_start, pendingWave: uuidList(r.pending_wave) })), running: fresh.n };
  },

  /** The campaign's contacts among `contactIds` that already have their email (recorded by an earlier attempt). */
  async contactsWithEmail(em: EntityManager, campaignId: string, contactIds: string[]): Promise<Set<string>> {
    if (!contactIds.length) return new Set();
    const rows = await executeBound<{ contact_id: string }>(em, `select contact_id from emails where campaign_id = ? and contact_id = any(?::uuid[])`, [
      campaignId,
      uuidArray(contactIds),
    ]);
    return new Set(rows.map((r) => r.contact_id));
  },

  /**
   * The rows of a recorded wave whose hand-over is not known, to hand over again: those still
   * recorded (a deleted contact takes its email with it) whose contact still exists, with their
   * content and stamp. A row feedback already moved past SENT (a delivery notice) was handed over.
   */
  async pendingWaveRows(em: EntityManager, ids: string[]): Promise<EmailRow[]> {
    if (!ids.length) return [];
    const rows = await executeBound<EmailTableRow>(
      em,
      `select e.* from emails e where e.id = any(?::uuid[]) and exists (select 1 from contacts c where c.id = e.contact_id) order by e.contact_id`,
      [uuidArray(ids)],
    );
    return rows.map(toEmail);
  },

  /** Creates this month's campaigns counter row (the first count of a month does). */
  async ensureCounter(em: EntityManager, projectId: string): Promise<void> {
    await em.execute(`insert into billing_usage (project_id, month, category) values (?, ${CURRENT_MONTH}, 'campaigns') on conflict do nothing`, [projectId]);
  },

  /**
   * One round of a batch, in one statement, only while `attempt` still owns the batch: records
   * the previous wave's hand-over (email.sent for what left, FAILED with email.failed for a relay's
   * refusal, QUEUED again for a temporary failure, the relay's message id when it gave one), then,
   * while the campaign is SENDING and its project enabled, records this wave in its final state:
   * each email whose contact still exists, SUPPRESSED for a suppressed address or (MARKETING) an
   * unsubscribed contact, FAILED when its message could not be built, the rest SENT with its
   * stamp as after a successful hand-over, as many as the monthly campaigns cap still allows (the
   * counter row locked, raised by the SENT ones); a (campaign, contact) already recorded is left
   * out. The claim then names this wave as pending (its hand-over not known), or is let go.
   */
  async recordRound(em: EntityManager, round: WaveRound): Promise<WaveRoundResult> {
    const sendable = round.wave.map((w) => w.email.id);
    const claimCte = round.release
      ? `delete from campaign_batch_claims where campaign_id = ? and batch_start = ? and attempt = ? returning 1`
      : // A campaign that may no longer send records nothing new, but a run again after a lost answer
        // finds the wave its first run recorded: that stays pending, to be handed over and recorded.
        `update campaign_batch_claims set pending_wave = case when (select may_send from state) then ?::uuid[]
           else coalesce((select array_agg(e.id) from emails e where e.id = any(?::uuid[])), '{}') end, updated_at = now()
         where campaign_id = ? and batch_start = ? and attempt = ? returning 1`;
    const claimParams = round.release
      ? [round.campaignId, round.batchStart, round.attempt]
      : [uuidArray(sendable), uuidArray(sendable), round.campaignId, round.batchStart, round.attempt];
    const htmls = boundTextArray(round.wave.map(({ email }) => email.html));
    const texts = boundTextArray(round.wave.map(({ email }) => email.text));
    const [row] = await executeBound<RoundRow>(
      em,
      `with state as (
         select c.status, p.disabled, p.disabled_reason, c.status = 'SENDING' and not p.disabled as may_send
         from campaigns c join projects p on p.id = c.project_id where c.id = ?
       ),
       -- The pending wave as this statement found it (a CTE reads the statement's snapshot, before
       -- claim's update): run again after its commit's answer was lost, the statement finds this
       -- wave pending instead, and the hand-over it already recorded is not recorded twice.
       prior as (select pending_wave from campaign_batch_claims where campaign_id = ? and batch_start = ? and attempt = ?),
       claim as (${claimCte}),
       handed as (
         select * from jsonb_to_recordset(?::jsonb) as t(id uuid, status text, error text, provider_message_id text, message_stamp jsonb)
         where exists (select 1 from claim) and t.id in (select unnest(pending_wave) from prior)
       ),
       -- The rare update: a refusal or a temporary failure corrects the row the wave recorded SENT.
       corrected as (
         update emails e set
           status = case when h.status = 'FAILED' then 'FAILED' else 'QUEUED' end,
           error = h.error, sent_at = null,
           message_stamp = case when h.status = 'FAILED' then h.message_stamp end,
           updated_at = now()
         from handed h
         where e.id = h.id and h.status in ('FAILED', 'RETRY') and e.status = 'SENT'
         returning e.id, e.project_id, e.contact_id, e.subject, e.template_id, e.campaign_id, e.source, e.created_at, h.status as outcome, h.error as outcome_error
       ),
       relay_ids as (
         update emails e set provider_message_id = h.provider_message_id, updated_at = now()
         from handed h where e.id = h.id and h.status = 'SENT' and h.provider_message_id is not null
       ),
       -- A failed email no longer counts against the monthly cap.
       released as (${billingUsageRepository.releaseSql(`(select project_id, source, created_at from corrected where outcome = 'FAILED') ended`)}),
       -- The bodies travel as bound parameters of their own, not inside the JSON (boundTextArray).
       wave as (
         select w.*, b.html, b.text from jsonb_to_recordset(?::jsonb) as w(position int, id uuid, project_id uuid, contact_id uuid, template_id uuid,
           campaign_id uuid, source text, type text, subject text, from_address text, from_name text, reply_to text, to_address text, to_name text,
           headers jsonb, message_id text, delivery_workflow_id text, message_stamp jsonb, failure text)
         join unnest(${htmls.sql}, ${texts.sql}) with ordinality as b(html, text, n) on b.n = w.position + 1
       ),
       judged as (
         select w.*,
           case when exists (select 1 from email_suppressions s where s.project_id = w.project_id and s.email = w.to_address) then ?::text
                when w.type = 'MARKETING' and not ct.subscribed then ?::text end as refusal
         from wave w join contacts ct on ct.id = w.contact_id and ct.project_id = w.project_id
         where exists (select 1 from claim) and (select may_send from state)
       ),
       counter as (
         select u.used from billing_usage u where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = 'campaigns' for update
       ),
       cap as (select l.monthly_limit from billing_limits l where l.project_id = ? and l.category = 'campaigns'),
       numbered as (
         select j.*, j.refusal is null and j.failure is null as sends,
           count(*) filter (where j.refusal is null and j.failure is null) over (order by j.position) as nth
         from judged j
       ),
       kept as (
         select n.* from numbered n
         where not n.sends or n.nth <= coalesce((select monthly_limit from cap) - (select used from counter), case when (select used from counter) is null then 0 end, n.nth)
       ),
       inserted as (
         insert into emails (id, project_id, contact_id, template_id, campaign_id, source, type, subject, from_address, from_name, reply_to,
           to_address, to_name, html, text, headers, status, error, message_id, delivery_workflow_id, attempts, sent_at, message_stamp)
         select id, project_id, contact_id, template_id, campaign_id, source, type, subject, from_address, from_name, reply_to,
           to_address, to_name, html, text, headers,
           case when refusal is not null then 'SUPPRESSED' when failure is not null then 'FAILED' else 'SENT' end,
           coalesce(refusal, failure), message_id, delivery_workflow_id,
           case when refusal is null then 1 else 0 end, case when sends then now() end, case when refusal is null then message_stamp end
         from kept order by position
         on conflict (contact_id, campaign_id) do nothing
         returning id, status, project_id, contact_id, subject, template_id, campaign_id, error
       ),
       -- Run again after its commit's answer was lost (the database went away: retryWhileDatabaseUnavailable),
       -- the statement finds this wave's rows already written under the ids the wave was built with,
       -- which no other wave has: they are recorded, so they are handed over (a recorded wave always is).
       already as (
         select e.id, e.status from emails e
         where e.id in (select id from wave) and exists (select 1 from claim)
       ),
       raised as (
         update billing_usage u set used = u.used + (select count(*) from inserted where status = 'SENT')
         where u.project_id = ? and u.month = ${CURRENT_MONTH} and u.category = 'campaigns' and exists (select 1 from inserted where status = 'SENT')
       ),
       recorded as (
         insert into events (project_id, contact_id, name, source, email_id, data)
         select project_id, contact_id, name, 'SYSTEM', email_id, data from (
           select e.project_id, e.contact_id, 'email.sent' as name, e.id as email_id,
                  jsonb_strip_nulls(jsonb_build_object('emailId', e.id, 'subject', e.subject, 'templateId', e.template_id, 'campaignId', e.campaign_id)) as data
           from handed h join emails e on e.id = h.id where h.status = 'SENT'
           union all
           select c.project_id, c.contact_id, 'email.failed', c.id,
                  jsonb_strip_nulls(jsonb_build_object('emailId', c.id, 'subject', c.subject, 'templateId', c.template_id, 'campaignId', c.campaign_id, 'error', c.outcome_error))
           from corrected c where c.outcome = 'FAILED'
           union all
           select i.project_id, i.contact_id, 'email.failed', i.id,
                  jsonb_strip_nulls(jsonb_build_object('emailId', i.id, 'subject', i.subject, 'templateId', i.template_id, 'campaignId', i.campaign_id, 'error', i.error))
           from inserted i where i.status = 'FAILED'
         ) x
         where contact_id is not null
         returning id, project_id, contact_id, name, created_at
       )
       select (select count(*) from claim)::int as claimed,
              (select status from state) as campaign_status, (select disabled from state) as disabled, (select disabled_reason from state) as disabled_reason,
              exists (select 1 from counter) as counted,
              (select monthly_limit from cap) as cap_limit,
              (select count(*) from numbered where sends)::int - (select count(*) from kept where sends)::int as beyond_cap,
              coalesce((select jsonb_agg(jsonb_build_object('id', id, 'status', status))
                        from (select id, status from inserted union all select id, status from already) r), '[]'::jsonb) as recorded,
              coalesce((select jsonb_agg(jsonb_build_object('id', id, 'project_id', project_id, 'contact_id', contact_id, 'name', name, 'created_at', created_at)) from recorded), '[]'::jsonb) as events`,
      [
        round.campaignId,
        round.campaignId,
        round.batchStart,
        round.attempt,
        ...claimParams,
        JSON.stringify(
          round.handedOver.map((o) => ({
            id: o.emailId,
            status: o.status,
            error: o.status === 'SENT' ? null : o.error,
            provider_message_id: o.status === 'SENT' ? o.providerMessageId : null,
            message_stamp: o.status === 'FAILED' ? o.stamp : null,
          })),
        ),
        JSON.stringify(
          // The statement reads the columns it names (the status comes from its own rules).
          round.wave.map(({ email, stamp, failure }, position) => ({
            position,
            ...emailRecord(email),
            html: undefined,
            text: undefined,
            message_stamp: stamp,
            failure,
          })),
        ),
        ...htmls.params,
        ...texts.params,
        round.refusals.suppressed,
        round.refusals.unsubscribed,
        round.projectId,
        round.projectId,
        round.projectId,
      ],
    );
    const events = new Map<string, RecordedEvent[]>();
    for (const r of row.events) {
      const list = events.get(r.project_id) ?? [];
      list.push({ id: r.id, name: r.name, contactId: r.contact_id, createdAt: new Date(r.created_at) });
      events.set(r.project_id, list);
    }
    const state: WaveRoundResult['state'] =
      row.campaign_status !== 'SENDING'
        ? { state: 'NOT_SENDING' }
        : row.disabled
          ? { state: 'PROJECT_DISABLED', disabledReason: row.disabled_reason }
          : { state: 'SENDING' };
    return {
      claimed: row.claimed > 0,
      state,
      recorded: row.recorded,
      beyondCap: row.beyond_cap,
      capLimit: row.cap_limit === null ? null : Number(row.cap_limit),
      counted: row.counted,
      events,
    };
  },
};

/** A uuid[] as the driver gives it back (an array, or its text form). */
function uuidList(value: string[] | string | null): string[] {
  if (!value) return [];
  if (Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return inner ? inner.split(',') : [];
}
