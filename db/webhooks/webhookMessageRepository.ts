import type { EntityManager } from '@mikro-orm/postgresql';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';
import { WEBHOOK_TEST_EVENT_NAME } from '../../shared/eventNames';

export type WebhookMessageStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';

/** One attempt as the message log shows it (contract 18). */
export interface WebhookAttempt {
  at: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface WebhookMessageRow {
  id: string;
  eventType: string;
  eventId: string | null;
  status: WebhookMessageStatus;
  attempts: WebhookAttempt[];
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** A message claimed for an attempt: its body exactly as it is signed and sent. */
export interface ClaimedWebhookMessage {
  id: string;
  body: string;
  /** The endpoint's version (updated_at) when claimed: a newer one than the deliverer read means a new url or secret. */
  endpointVersion: string;
  /** Attempts made before this one. */
  attemptCount: number;
}

/** Where a page of the log ended: the last message's created_at to the microsecond, and its id. */
export interface WebhookMessageKey {
  t: string;
  id: string;
}

interface MessageTableRow {
  id: string;
  event_type: string;
  event_id: string | null;
  status: WebhookMessageStatus;
  attempts: WebhookAttempt[];
  next_attempt_at: TimestampText | null;
  created_at: TimestampText;
  key_t: string;
}

const COLUMNS = `id, event_type, event_id, status, attempts, next_attempt_at, created_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as key_t`;

const toMessage = (r: MessageTableRow): WebhookMessageRow => ({
  id: r.id,
  eventType: r.event_type,
  eventId: r.event_id,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: r.status === 'PENDING' ? dateOrNull(r.next_attempt_at) : null,
  createdAt: new Date(r.created_at),
});

/** An attempt that ended: `retryAfterSeconds` null on a failure means no attempt is left (the message is FAILED). */
export interface FinishedWebhookAttempt {
  messageId: string;
  attempt: WebhookAttempt;
  succeeded: boolean;
  retryAfterSeconds: number | null;
}

/** The rows RECORD_ATTEMPTS_SQL reads from its one parameter. */
function recordedAttemptRows(attempts: ReadonlyArray<FinishedWebhookAttempt>) {
  return attempts.map((a) => ({
    id: a.messageId,
    attempt: a.attempt,
    status: a.succeeded ? 'SUCCEEDED' : a.retryAfterSeconds === null ? 'FAILED' : 'PENDING',
    retry_after: a.succeeded ? null : a.retryAfterSeconds,
  }));
}

/**
 * Records attempts that ended (a jsonb array of recordedAttemptRows, its one parameter). A message
 * no longer PENDING (its endpoint deleted) is left as it is.
 */
const RECORD_ATTEMPTS_SQL = `update webhook_messages m set
         attempt_count = m.attempt_count + 1,
         attempts = m.attempts || jsonb_build_array(o.attempt),
         status = o.status,
         next_attempt_at = case when o.retry_after is null then null else now() + make_interval(secs => o.retry_after) end,
         leased_until = null
       from jsonb_to_recordset(?::jsonb) as o(id uuid, attempt jsonb, status text, retry_after int)
       where m.id = o.id and m.status = 'PENDING'`;

/**
 * The messages of outbound webhooks and their delivery state: what is due, the lease an attempt
 * holds, each attempt's outcome, the log and its retention. Messages for recorded events are
 * inserted by the `events` trigger (Migration20261128000000WebhookEndpoints), in the event's
 * own statement; only the test event is inserted here.
 */
export const webhookMessageRepository = {
  /**
   * Records attempts that ended (as recordAttempts) and claims up to `limit` due messages of an
   * enabled endpoint for one attempt each, in one statement: one round trip where they would take
   * two, what a delivery run does each time attempts end while messages wait. A claim is a lease
   * (`leased_until`) of `leaseSeconds`, so an attempt cut short (a killed worker) comes due again
   * then, and a second deliverer running meanwhile skips them. The lease is a column no index
   * holds, so the claim is a HOT update (the table keeps room on its pages: fillfactor 80). The
   * messages recorded are never the ones claimed (one whose lease ran out is left to the next claim).
   */
  async recordAttemptsAndClaimDue(
    em: EntityManager,
    attempts: ReadonlyArray<FinishedWebhookAttempt>,
    claim: { endpointId: string; limit: number; leaseSeconds: number },
  ): Promise<ClaimedWebhookMessage[]> {
    const recorded = recordedAttemptRows(attempts);
    const rows = await queryRows<{ id: string; body: string; attempt_count: number; endpoint_version: string }>(
      em,
      `with recorded as (${RECORD_ATTEMPTS_SQL} returning m.id)
       update webhook_messages m set leased_until = now() + make_interval(secs => ?)
       from (
         select id from webhook_messages
         where endpoint_id = ? and status = 'PENDING' and next_attempt_at <= now()
           and (leased_until is null or leased_until <= now())
           and id <> all(?::uuid[])
           and exists (select 1 from webhook_endpoints e where e.id = ? and e.enabled)
         order by next_attempt_at
         limit ?
         for update skip locked
       ) due, webhook_endpoints e
       where m.id = due.id and e.id = m.endpoint_id
       returning m.id, m.payload::text as body, m.attempt_count, e.updated_at::text as endpoint_version`,
      [JSON.stringify(recorded), claim.leaseSeconds, claim.endpointId, `{${recorded.map((r) => r.id).join(',')}}`, claim.endpointId, claim.limit],
    );
    return rows.map((r) => ({ id: r.id, body: r.body, attemptCount: r.attempt_count, endpointVersion: r.endpoint_version }));
  },

  /**
   * Records attempts that ended, in one statement. `retryAfterSeconds` null on a failure means no
   * attempt is left: the message is FAILED. A message no longer PENDING (its endpoint deleted) is
   * left as it is.
   */
  async recordAttempts(em: EntityManager, attempts: ReadonlyArray<FinishedWebhookAttempt>): Promise<void> {
    if (!attempts.length) return;
    await em.execute(RECORD_ATTEMPTS_SQL, [JSON.stringify(recordedAttemptRows(attempts))]);
  },

  /** When the endpoint's next pending message is due, its lease included (null: none pending). */
  async nextDueAt(em: EntityManager, endpointId: string): Promise<Date | null> {
    const [row] = await queryRows<{ next: TimestampText | null }>(
      em,
      `select min(greatest(next_attempt_at, coalesce(leased_until, next_attempt_at))) as next
       from webhook_messages where endpoint_id = ? and status = 'PENDING'`,
      [endpointId],
    );
    return dateOrNull(row?.next);
  },

  /** The test event (contract 18): a message for this endpoint alone, not an event of the project. */
  async insertTest(em: EntityManager, endpoint: { id: string; projectId: string }): Promise<string> {
    const [row] = await queryRows<{ id: string }>(
      em,
      `insert into webhook_messages (id, endpoint_id, project_id, event_type, payload, next_attempt_at)
       select m.id, ?, ?, m.name,
         jsonb_build_object(
           'type', m.name,
           'timestamp', mailroom_webhook_iso(now()),
           'source', 'system',
           'data', jsonb_build_object(
             'event', jsonb_build_object('id', m.id, 'name', m.name, 'createdAt', mailroom_webhook_iso(now()), 'data', jsonb_build_object('endpointId', ?::uuid)),
             'contact', null
           )
         ),
         now()
       from (select gen_random_uuid() as id, ?::text as name) m
       returning id`,
      [endpoint.id, endpoint.projectId, endpoint.id, WEBHOOK_TEST_EVENT_NAME],
    );
    return row.id;
  },

  async page(
    em: EntityManager,
    endpointId: string,
    options: { status?: WebhookMessageStatus; limit: number; after?: WebhookMessageKey },
  ): Promise<{ messages: WebhookMessageRow[]; hasMore: boolean; last: WebhookMessageKey | null }> {
    const where = ['endpoint_id = ?'];
    const params: unknown[] = [endpointId];
    if (options.status) {
      where.push('status = ?');
      params.push(options.status);
    }
    if (options.after) {
      where.push('(created_at, id) < (?::timestamptz, ?::uuid)');
      params.push(options.after.t, options.after.id);
    }
    params.push(options.limit + 1);
    const rows = await queryRows<MessageTableRow>(
      em,
      `select ${COLUMNS} from webhook_messages where ${where.join(' and ')} order by created_at desc, id desc limit ?`,
      params,
    );
    const hasMore = rows.length > options.limit;
    const served = rows.slice(0, options.limit);
    const lastRow = served.at(-1);
    return { messages: served.map(toMessage), hasMore, last: lastRow ? { t: lastRow.key_t, id: lastRow.id } : null };
  },

  /** Makes the message PENDING and due now (a manual retry), waking the endpoint's delivery; false when there is no such message. */
  async retryNow(em: EntityManager, endpoint: { id: string; projectId: string }, messageId: string): Promise<boolean> {
    return em.transactional(async (tx) => {
      const rows = await tx.execute(`update webhook_messages set status = 'PENDING', next_attempt_at = now() where endpoint_id = ? and id = ? returning id`, [
        endpoint.id,
        messageId,
      ]);
      if (!rows.length) return false;
      await tx.execute(`select pg_notify('mailroom_webhook_due', ?)`, [`${endpoint.id}:${endpoint.projectId}`]);
      return true;
    });
  },

  /** Contract 18: messages and their attempts are kept `days` days. */
  async deleteCreatedBefore(em: EntityManager, cutoff: Date, limit: number): Promise<number> {
    const rows = await em.execute(`delete from webhook_messages where id in (select id from webhook_messages where created_at < ? limit ?) returning id`, [
      cutoff.toISOString(),
      limit,
    ]);
    return rows.length;
  },
};
