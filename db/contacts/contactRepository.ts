import type { EntityManager } from '@mikro-orm/postgresql';
import { setOwn } from '../../lib/ownProperty';
import { queryRows, type TimestampText } from '../sql/rows';

export interface ContactRow {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export interface ContactUpsert {
  /** Normalised (trimmed, lower-cased) address. */
  email: string;
  /** Subscription state if this write creates the contact. */
  subscribedIfNew: boolean;
  /** Subscription state to set if the contact exists; undefined keeps it. */
  subscribedIfExisting?: boolean;
  /** The data changes the contact data rules decided (services/contacts/contactDataRules.ts): keys to save, keys to delete, and this request's one-shot values. */
  data: { set: Record<string, unknown>; unset: string[]; oneShot: Record<string, unknown> };
  /** An event to record for the contact in the same statement (POST /v1/track). */
  event?: { name: string; data: Record<string, unknown> | null };
  /** Also answer whether the address is on the project's suppression list (POST /v1/send). */
  reportSuppression?: boolean;
}

export interface RecordedEvent {
  id: string;
  name: string;
  contactId: string;
  createdAt: Date;
}

export interface UpsertResult {
  contact: ContactRow;
  created: boolean;
  /** Set when an existing contact's subscription flipped. */
  subscriptionChangedTo?: boolean;
  /** The tracked event (if one was asked for) and any contact.subscribed / contact.unsubscribed emitted. */
  events: RecordedEvent[];
  trackedEventId?: string;
  /** Whether the address is suppressed, when the write asked (reportSuppression). */
  suppressed?: boolean;
}

/** A `contacts` row as a statement returns it. */
export interface ContactTableRow {
  id: string;
  project_id: string;
  email: string;
  subscribed: boolean;
  /** jsonb, parsed by the driver; a string only where a statement built it as text. */
  data: Record<string, unknown> | string | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

/** The columns toContact reads (statements that return a contact need not return its project). */
export type ContactColumns = Omit<ContactTableRow, 'project_id'>;

export function toContact(row: ContactColumns): ContactRow {
  return {
    id: row.id,
    email: row.email,
    subscribed: row.subscribed,
    data: typeof row.data === 'string' ? (JSON.parse(row.data) as Record<string, unknown>) : (row.data ?? {}),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/**
 * Later rows for the same email fold into the first (their data changes apply after it), since
 * one INSERT ... ON CONFLICT statement may touch a row only once.
 */
function foldDuplicates(rows: ContactUpsert[]): Array<{ row: ContactUpsert; indexes: number[] }> {
  const byEmail = new Map<string, { row: ContactUpsert; indexes: number[] }>();
  rows.forEach((row, index) => {
    const seen = byEmail.get(row.email);
    if (!seen) {
      byEmail.set(row.email, { row: { ...row, data: { set: { ...row.data.set }, unset: [...row.data.unset], oneShot: row.data.oneShot } }, indexes: [index] });
      return;
    }
    const merged = seen.row;
    for (const key of row.data.unset) {
      delete merged.data.set[key];
      if (!merged.data.unset.includes(key)) merged.data.unset.push(key);
    }
    for (const [key, value] of Object.entries(row.data.set)) {
      setOwn(merged.data.set, key, value);
      merged.data.unset = merged.data.unset.filter((k) => k !== key);
    }
    if (row.subscribedIfExisting !== undefined) merged.subscribedIfExisting = row.subscribedIfExisting;
    seen.indexes.push(index);
  });
  // In the order of the conflict key: every writer then takes its row locks (and waits on rows
  // another writer is inserting) in one order, so two imports sharing addresses in different
  // orders queue behind each other instead of deadlocking.
  return [...byEmail.values()].sort((a, b) => compareInCollationC(a.row.email, b.row.email));
}

/**
 * The order of PostgreSQL's "C" collation in a UTF-8 database (byte order, which is code point
 * order), which the locking SELECT below uses too. JavaScript's `<` compares UTF-16 code units,
 * which puts astral characters (surrogate pairs) before U+E000-U+FFFF; they are moved after.
 */
export function compareInCollationC(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(codeUnit: number): number {
  if (codeUnit >= 0xd800 && codeUnit <= 0xdfff) return codeUnit + 0x2000;
  if (codeUnit >= 0xe000) return codeUnit - 0x800;
  return codeUnit;
}

/**
 * Why the database refused a contact write, if it is about the written values: the data limits
 * (CHECK, 23514) or a value it cannot take (class 22, data exception). Anything else (a lost
 * connection, a deadlock) is not the row's fault: undefined.
 */
export function contactValueRefusal(err: unknown): 'dataLimits' | 'invalidValue' | undefined {
  const code = (err as { code?: unknown }).code;
  if (code === '23514') return 'dataLimits';
  if (typeof code === 'string' && code.startsWith('22')) return 'invalidValue';
  return undefined;
}

/**
 * One statement: upsert every contact by (project, email) applying the data rules as
 * `(data || set) - unset`, record a contact.subscribed / contact.unsubscribed event for every
 * existing contact whose subscription flips (against `prev_subscribed`, read under lock just
 * before), and the tracked events asked for. The unique key decides who creates a contact.
 *
 * An existing contact the write would not change is not written (no row version, its
 * `updatedAt` stays: a receipt to a returning customer is not an edit); the statement reads it
 * instead (`kept`, from the statement's snapshot). The one row that read misses is a contact
 * another writer inserted after the snapshot was taken and that this write would not change:
 * upsertByEmail runs the statement again for it.
 *
 * Parts no row needs are left out (a track without `subscribed` cannot flip anything, most
 * writes unset nothing): this is the hottest statement of the API, and the leaner variants plan
 * and run faster. There are eight variants at most, each built once.
 */
interface UpsertShape {
  subscriptionUpdates: boolean;
  unsets: boolean;
  events: boolean;
  suppression: boolean;
}

function buildUpsertSql(shape: UpsertShape): string {
  const subscribedValue = shape.subscriptionUpdates
    ? `coalesce((select i.sub_update from input i where i.email = excluded.email), c.subscribed)`
    : `c.subscribed`;
  const dataValue = shape.unsets
    ? `(c.data || excluded.data) - coalesce((select i.unset_keys from input i where i.email = excluded.email), '{}'::text[])`
    : `c.data || excluded.data`;
  const flips = shape.subscriptionUpdates
    ? `flips as (
  insert into events (project_id, contact_id, name, source, data)
  select ?, r.id, case when r.subscribed then 'contact.subscribed' else 'contact.unsubscribed' end, 'SYSTEM', ?::jsonb
  from res r where not r.inserted and r.prev_subscribed is not null and r.prev_subscribed <> r.subscribed
  returning id, contact_id, name, created_at
),`
    : `flips as (select null::uuid as id, null::uuid as contact_id, null::text as name, null::timestamptz as created_at where false),`;
  const tracked = shape.events
    ? `tracked as (
  insert into events (project_id, contact_id, name, data, source)
  select ?, r.id, r.event_name, r.event_data, 'API' from res r where r.event_name is not null
  returning id, contact_id, name, created_at
)`
    : `tracked as (select null::uuid as id, null::uuid as contact_id, null::text as name, null::timestamptz as created_at where false)`;
  // Answered in the same round trip, so a send needs no second statement to learn it.
  const suppressed = shape.suppression
    ? `exists (select 1 from email_suppressions s where s.project_id = ? and s.email = r.email) as suppressed`
    : `null::boolean as suppressed`;
  return `
with input as (
  select * from jsonb_to_recordset(?::jsonb)
    as t(ord int, email text, sub_new boolean, sub_update boolean, prev_subscribed boolean, set_data jsonb, unset_keys text[], event_name text, event_data jsonb)
),
up as (
  insert into contacts as c (project_id, email, subscribed, data)
  select ?, i.email, i.sub_new, i.set_data from input i order by i.ord
  on conflict (project_id, email) do update set subscribed = ${subscribedValue}, data = ${dataValue}, updated_at = now()
    where (c.subscribed, c.data) is distinct from (${subscribedValue}, ${dataValue})
  returning c.id, c.email, c.subscribed, c.data, c.created_at, c.updated_at, (xmax = 0) as inserted
),
kept as (
  select c.id, c.email, c.subscribed, c.data, c.created_at, c.updated_at, false as inserted
  from input i join contacts c on c.project_id = ? and c.email = i.email
  where not exists (select 1 from up where up.email = i.email)
),
res as (
  select w.*, i.prev_subscribed, i.event_name, i.event_data, i.ord
  from (select * from up union all select * from kept) w join input i on i.email = w.email
),
${flips}
${tracked}
select r.id, r.email, r.subscribed, r.data, r.created_at, r.updated_at, r.inserted, r.prev_subscribed, r.ord,
  (select t.id from tracked t where t.contact_id = r.id limit 1) as tracked_event_id,
  coalesce((select json_agg(json_build_object('id', e.id, 'name', e.name, 'contactId', e.contact_id, 'createdAt', e.created_at))
            from (select * from flips union all select * from tracked) e where e.contact_id = r.id), '[]'::json) as events,
  ${suppressed}
from res r order by r.ord`;
}

/** upsertSql's row: the contact as written, and what the write did. */
interface UpsertedContactRow extends ContactColumns {
  inserted: boolean;
  prev_subscribed: boolean | null;
  ord: number;
  tracked_event_id: string | null;
  /** json_agg of json_build_object: camelCase keys, the timestamp as JSON text. */
  events: Array<{ id: string; name: string; contactId: string; createdAt: string }> | string;
  suppressed: boolean | null;
}

const upsertSqlCache = new Map<string, string>();
function upsertSql(shape: UpsertShape): string {
  const key = `${+shape.subscriptionUpdates}${+shape.unsets}${+shape.events}${+shape.suppression}`;
  let sql = upsertSqlCache.get(key);
  if (!sql) upsertSqlCache.set(key, (sql = buildUpsertSql(shape)));
  return sql;
}

/** Bulk writes that cannot flip a subscription need no answer per row: no RETURNING, no events. */
function leanUpsertSql(unsets: boolean): string {
  const dataSet = unsets
    ? `(c.data || excluded.data) - coalesce((select i.unset_keys from input i where i.email = excluded.email), '{}'::text[])`
    : `c.data || excluded.data`;
  return `
with input as (
  select * from jsonb_to_recordset(?::jsonb) as t(ord int, email text, sub_new boolean, set_data jsonb, unset_keys text[])
)
insert into contacts as c (project_id, email, subscribed, data)
select ?, i.email, i.sub_new, i.set_data from input i order by i.ord
on conflict (project_id, email) do update set data = ${dataSet}, updated_at = now() where c.data is distinct from ${dataSet}`;
}

export const contactRepository = {
  /**
   * Creates or updates contacts by email (see upsertSql). Results come back in the order of
   * `rows`; rows repeating an email share the result of its first row.
   */
  async upsertByEmail(
    em: EntityManager,
    projectId: string,
    rows: ContactUpsert[],
    changeSource = 'api',
    changeDetail: Record<string, unknown> = {},
  ): Promise<UpsertResult[]> {
    if (!rows.length) return [];
    const folded = foldDuplicates(rows);
    // `ords` index `folded`; each statement numbers its input rows 0.. and the answer maps back.
    const run = async (tx: EntityManager, previous: Map<string, boolean>, ords: number[], attempt = 1): Promise<UpsertedContactRow[]> => {
      const part = ords.map((index) => folded[index].row);
      const input = part.map((row, ord) => ({
        ord,
        email: row.email,
        sub_new: row.subscribedIfNew,
        sub_update: row.subscribedIfExisting ?? null,
        prev_subscribed: previous.get(row.email) ?? null,
        set_data: row.data.set,
        unset_keys: row.data.unset,
        event_name: row.event?.name ?? null,
        event_data: row.event?.data ?? null,
      }));
      const shape: UpsertShape = {
        subscriptionUpdates: input.some((i) => i.sub_update !== null),
        unsets: input.some((i) => i.unset_keys.length > 0),
        events: input.some((i) => i.event_name !== null),
        suppression: part.some((row) => row.reportSuppression === true),
      };
      const params: unknown[] = [JSON.stringify(input), projectId, projectId];
      if (shape.subscriptionUpdates) params.push(projectId, JSON.stringify({ source: changeSource, ...changeDetail }));
      if (shape.events) params.push(projectId);
      if (shape.suppression) params.push(projectId);
      const answered = (await queryRows<UpsertedContactRow>(tx, upsertSql(shape), params)).map((r) => ({ ...r, ord: ords[r.ord] }));
      if (answered.length === ords.length) return answered;
      // A contact another writer inserted after this statement's snapshot (see upsertSql): the
      // next statement's snapshot sees it. Nothing was recorded for it yet.
      const seen = new Set(answered.map((r) => r.ord));
      const missed = ords.filter((index) => !seen.has(index));
      if (attempt >= 3) throw new Error(`contact upsert: ${missed.length} contacts neither written nor read after ${attempt} statements`);
      return [...answered, ...(await run(tx, previous, missed, attempt + 1))];
    };
    const every = folded.map((_, index) => index);
    // Only a write that sets the subscription of existing contacts can flip one. Then the current
    // states are locked and read first (a statement cannot lock rows it also updates), and the
    // upsert compares against them; otherwise the upsert alone is one round trip.
    const mayFlip = folded.filter(({ row }) => row.subscribedIfExisting !== undefined).map(({ row }) => row.email);
    const result = mayFlip.length
      ? await em.transactional(async (tx) => {
          const locked = await tx.execute<Array<{ email: string; subscribed: boolean }>>(
            `select email, subscribed from contacts where project_id = ? and email in (select jsonb_array_elements_text(?::jsonb)) order by email collate "C" for update`,
            [projectId, JSON.stringify(mayFlip)],
          );
          return run(tx, new Map(locked.map((r) => [r.email, r.subscribed])), every);
        })
      : await run(em, new Map(), every);
    const out: UpsertResult[] = new Array(rows.length);
    for (const r of result) {
      const recorded = typeof r.events === 'string' ? (JSON.parse(r.events) as Exclude<UpsertedContactRow['events'], string>) : r.events;
      const events: RecordedEvent[] = recorded.map((e) => ({
        ...e,
        createdAt: new Date(e.createdAt),
      }));
      const upsert: UpsertResult = {
        contact: toContact(r),
        created: r.inserted,
        subscriptionChangedTo: !r.inserted && r.prev_subscribed !== null && r.prev_subscribed !== r.subscribed ? r.subscribed : undefined,
        events,
        trackedEventId: r.tracked_event_id ?? undefined,
        suppressed: r.suppressed ?? undefined,
      };
      for (const index of folded[r.ord].indexes) out[index] = upsert;
    }
    return out;
  },

  /**
   * For bulk writers that need no per-row answer (CSV import): the same rules as upsertByEmail,
   * and the events it recorded. When no row can flip a subscription, the statement is the lean
   * form, which is what makes a 100,000-row import fit in seconds.
   */
  async upsertManyByEmail(em: EntityManager, projectId: string, rows: ContactUpsert[], changeSource: string): Promise<{ events: RecordedEvent[] }> {
    if (!rows.length) return { events: [] };
    if (rows.some((r) => r.subscribedIfExisting !== undefined || r.event)) {
      const results = await contactRepository.upsertByEmail(em, projectId, rows, changeSource);
      const events = new Map<string, RecordedEvent>();
      for (const result of results) for (const event of result.events) events.set(event.id, event);
      return { events: [...events.values()] };
    }
    const input = foldDuplicates(rows).map(({ row }, ord) => ({
      ord,
      email: row.email,
      sub_new: row.subscribedIfNew,
      set_data: row.data.set,
      unset_keys: row.data.unset,
    }));
    await em.execute(leanUpsertSql(input.some((i) => i.unset_keys.length > 0)), [JSON.stringify(input), projectId]);
    return { events: [] };
  },

  async findById(em: EntityManager, projectId: string, id: string): Promise<ContactRow | null> {
    const rows = await queryRows<ContactTableRow>(em, `select * from contacts where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toContact(rows[0]) : null;
  },

  async findByEmail(em: EntityManager, projectId: string, email: string): Promise<ContactRow | null> {
    const rows = await queryRows<ContactTableRow>(em, `select * from contacts where project_id = ? and email = ?`, [projectId, email]);
    return rows.length ? toContact(rows[0]) : null;
  },

  /** Gives a contact another address; a unique violation (23505, the address is taken) is the caller's to answer. */
  async changeEmail(em: EntityManager, projectId: string, id: string, email: string): Promise<void> {
    await em.execute(`update contacts set email = ?, updated_at = now() where project_id = ? and id = ?`, [email, projectId, id]);
  },

  /**
   * Sets the subscription of the project's contacts among `ids` (a bulk job): each flip goes
   * through upsertByEmail, so it records its contact.subscribed / contact.unsubscribed event as
   * every other subscription change does, with `{ source, ...detail }` as its data. Contacts
   * already in that state are not written (their updatedAt stays). The rows are locked first, in
   * the upsert's lock order, so a contact deleted meanwhile is reported missing, not re-created.
   * Runs in the caller's transaction; answers the ids found and the events recorded.
   */
  async setSubscriptionById(
    tx: EntityManager,
    projectId: string,
    ids: string[],
    subscribed: boolean,
    change: { source: string; detail?: Record<string, unknown> },
  ): Promise<{ found: string[]; events: RecordedEvent[] }> {
    const locked = await tx.execute<Array<{ id: string; email: string; subscribed: boolean }>>(
      `select id, email, subscribed from contacts
       where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid)
       order by email collate "C" for update`,
      [projectId, JSON.stringify(ids)],
    );
    const flipping = locked.filter((r) => r.subscribed !== subscribed);
    const results = await contactRepository.upsertByEmail(
      tx,
      projectId,
      flipping.map((r) => ({ email: r.email, subscribedIfNew: subscribed, subscribedIfExisting: subscribed, data: { set: {}, unset: [], oneShot: {} } })),
      change.source,
      change.detail,
    );
    return { found: locked.map((r) => r.id), events: results.flatMap((r) => r.events) };
  },

  /** Which of `contactIds` are contacts that are not subscribed (now). */
  async unsubscribedAmong(em: EntityManager, contactIds: string[]): Promise<Set<string>> {
    const rows = await em.execute<Array<{ id: string }>>(`select id from contacts where id = any(?::uuid[]) and not subscribed`, [`{${contactIds.join(',')}}`]);
    return new Set(rows.map((r) => r.id));
  },

  /** Creates the contacts of `emails` that do not exist yet (existing ones keep their data and updatedAt); the ids created. */
  async createMissing(em: EntityManager, projectId: string, emails: string[], subscribed: boolean): Promise<string[]> {
    const inserted = await em.execute<Array<{ id: string }>>(
      `insert into contacts (project_id, email, subscribed)
         select ?, e, ? from jsonb_array_elements_text(?::jsonb) e
         on conflict (project_id, email) do nothing returning id`,
      [projectId, subscribed, JSON.stringify(emails)],
    );
    return inserted.map((r) => r.id);
  },

  /** The id of each of `emails` that names a contact of the project. */
  async idsByEmail(em: EntityManager, projectId: string, emails: string[]): Promise<Array<{ id: string; email: string }>> {
    return em.execute<Array<{ id: string; email: string }>>(
      `select id, email from contacts where project_id = ? and email in (select jsonb_array_elements_text(?::jsonb))`,
      [projectId, JSON.stringify(emails)],
    );
  },
};
