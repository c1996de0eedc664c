import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../contacts/contactRepository';
import { toContact, type ContactTableRow } from '../contacts/contactRepository';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';
import { compileCondition, loadReferencedSegments, type ConditionTree } from '../conditions';
import { reconcileTrackedSegment, type TrackedSegment } from './segmentMembership';
import { segmentEntryEventName, segmentExitEventName } from '../events/systemEventNames';

export interface SegmentRow {
  id: string;
  projectId: string;
  name: string;
  description: string | null;
  slug: string;
  type: 'DYNAMIC' | 'STATIC';
  condition: ConditionTree | null;
  trackMembership: boolean;
  memberCount: number;
  memberCountAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A `segments` row as a statement returns it. */
export interface SegmentTableRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  slug: string;
  type: SegmentRow['type'];
  /** jsonb, parsed by the driver. */
  condition: ConditionTree | string | null;
  track_membership: boolean;
  member_count: number;
  member_count_at: TimestampText | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

function toSegment(row: SegmentTableRow): SegmentRow {
  return {
    id: row.id,
    projectId: row.project_id,
    name: row.name,
    description: row.description ?? null,
    slug: row.slug,
    type: row.type,
    condition: typeof row.condition === 'string' ? (JSON.parse(row.condition) as ConditionTree) : (row.condition ?? null),
    trackMembership: row.track_membership,
    memberCount: row.member_count,
    memberCountAt: dateOrNull(row.member_count_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** Contract section 6: the name lower-cased, spaces turned into hyphens, other non-word characters dropped. */
export function slugOf(name: string): string {
  const slug = name
    .toLowerCase()
    .trim()
    .replace(/\s+/g, '-')
    .replace(/[^\w-]/g, '');
  return slug || 'segment';
}

const isTracked = (s: SegmentRow): s is SegmentRow & { condition: ConditionTree } => s.type === 'DYNAMIC' && s.trackMembership && s.condition !== null;

export function asTracked(s: SegmentRow): TrackedSegment {
  return { id: s.id, projectId: s.projectId, name: s.name, slug: s.slug, condition: s.condition! };
}

/** Differences (contacts that joined or left) handled per page when a tracked segment is recomputed. */
export const RECOMPUTE_PAGE = 2000;

/** Statuses in which a campaign still uses its audience (DELETE /segments/:id refuses then). */
const ACTIVE_CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING'];

/** A jsonpath finding any filter whose field is `$f` (bound, never built from caller text). */
const FIELD_IS = 'lax $.** ? (@.field == $f)';
const FIELD_UNDER = 'lax $.** ? (@.field == $f || @.field starts with $prefix)';

export const segmentRepository = {
  async create(
    em: EntityManager,
    input: {
      projectId: string;
      name: string;
      description: string | null;
      type: 'DYNAMIC' | 'STATIC';
      condition: ConditionTree | null;
      trackMembership: boolean;
    },
  ): Promise<SegmentRow> {
    const base = slugOf(input.name);
    // Slugs are unique per project: a taken one gets -2, -3, ... (the unique index decides races).
    for (let attempt = 1; ; attempt++) {
      const slug = attempt === 1 ? base : `${base}-${attempt}`;
      const taken = await queryRows(em, `select 1 from segments where project_id = ? and slug = ?`, [input.projectId, slug]);
      if (taken.length && attempt < 1000) continue;
      try {
        const [row] = await queryRows<SegmentTableRow>(
          em,
          `insert into segments (project_id, name, description, slug, type, condition, track_membership)
           values (?, ?, ?, ?, ?, ?::jsonb, ?) returning *`,
          [input.projectId, input.name, input.description, slug, input.type, input.condition ? JSON.stringify(input.condition) : null, input.trackMembership],
        );
        const segment = toSegment(row);
        // A new segment's first members did not "join": its baseline is written without events.
        if (isTracked(segment)) await segmentRepository.recompute(em, segment, { emitEvents: false });
        return (await segmentRepository.refreshCount(em, segment))!;
      } catch (err) {
        if ((err as { constraint?: string }).constraint === 'segments_project_slug_unique' && attempt < 1000) continue;
        throw err;
      }
    }
  },

  /** Newest first. */
  async list(em: EntityManager, projectId: string): Promise<SegmentRow[]> {
    const rows = await queryRows<SegmentTableRow>(em, `select * from segments where project_id = ? order by created_at desc, id desc`, [projectId]);
    return rows.map(toSegment);
  },

  async findById(em: EntityManager, projectId: string, id: string): Promise<SegmentRow | null> {
    const rows = await queryRows<SegmentTableRow>(em, `select * from segments where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toSegment(rows[0]) : null;
  },

  /** The segment as committed, share-locked until the transaction ends, while it is still a tracked dynamic segment. */
  async lockTracked(em: EntityManager, segmentId: string): Promise<SegmentRow | null> {
    const [row] = await queryRows<SegmentTableRow>(em, `select * from segments where id = ? and type = 'DYNAMIC' and track_membership for share`, [segmentId]);
    return row ? toSegment(row) : null;
  },

  async listTracked(em: EntityManager, projectId: string): Promise<SegmentRow[]> {
    const rows = await queryRows<SegmentTableRow>(em, `select * from segments where project_id = ? and type = 'DYNAMIC' and track_membership order by id`, [
      projectId,
    ]);
    return rows.map(toSegment);
  },

  /** One page of every project's tracked dynamic segments, in id order after `afterId` (null: from the first). */
  async trackedPage(em: EntityManager, afterId: string | null, limit: number): Promise<Array<{ id: string; projectId: string }>> {
    const rows = await em.execute<Array<{ id: string; project_id: string }>>(
      `select id, project_id from segments where type = 'DYNAMIC' and track_membership and (?::uuid is null or id > ?::uuid) order by id limit ?`,
      [afterId, afterId, limit],
    );
    return rows.map((r) => ({ id: r.id, projectId: r.project_id }));
  },

  /**
   * Name, description, condition and tracking. The slug stays: automations trigger on
   * segment.<slug>.entry, and a rename must not silently disconnect them. A changed condition of
   * a tracked segment moves its members at once (with entry/exit events); tracking turned on
   * writes the baseline without events; turned off, the member rows go.
   */
  async update(
    em: EntityManager,
    current: SegmentRow,
    changes: { name?: string; description?: string | null; condition?: ConditionTree; trackMembership?: boolean },
  ): Promise<{ segment: SegmentRow; events: RecordedEvent[] }> {
    const [row] = await queryRows<SegmentTableRow>(
      em,
      `update segments set name = coalesce(?, name), description = case when ? then ? else description end,
         condition = coalesce(?::jsonb, condition), track_membership = coalesce(?, track_membership), updated_at = now()
       where id = ? returning *`,
      [
        changes.name ?? null,
        changes.description !== undefined,
        changes.description ?? null,
        changes.condition ? JSON.stringify(changes.condition) : null,
        changes.trackMembership ?? null,
        current.id,
      ],
    );
    let segment = toSegment(row);
    let events: RecordedEvent[] = [];
    if (isTracked(segment)) {
      const wasTracked = isTracked(current);
      if (!wasTracked || changes.condition) {
        events = (await segmentRepository.recompute(em, segment, { emitEvents: wasTracked })).events;
      }
    } else if (segment.type === 'DYNAMIC' && isTracked(current)) {
      await em.execute(`delete from segment_members where segment_id = ?`, [segment.id]);
    }
    if (segment.type === 'DYNAMIC' && (changes.condition || changes.trackMembership !== undefined))
      segment = (await segmentRepository.refreshCount(em, segment))!;
    return { segment, events };
  },

  /** Campaigns still using the segment (DRAFT, SCHEDULED, SENDING), by id or by a FILTERED audience naming it. */
  async activeCampaignsUsing(em: EntityManager, projectId: string, segmentId: string): Promise<Array<{ id: string; name: string }>> {
    return queryRows<{ id: string; name: string }>(
      em,
      `select id, name from campaigns
       where project_id = ? and status in (select jsonb_array_elements_text(?::jsonb))
         and (segment_id = ? or (audience_type = 'FILTERED' and audience_condition is not null
              and jsonb_path_exists(audience_condition, ?::jsonpath, jsonb_build_object('f', ?::text))))
       order by created_at, id`,
      [projectId, JSON.stringify(ACTIVE_CAMPAIGN_STATUSES), segmentId, FIELD_IS, `segment.${segmentId}`],
    );
  },

  /** Other segments whose condition refers to this one. */
  async segmentsReferring(em: EntityManager, projectId: string, segmentId: string): Promise<Array<{ id: string; name: string }>> {
    return queryRows<{ id: string; name: string }>(
      em,
      `select id, name from segments where project_id = ? and id <> ? and condition is not null
         and jsonb_path_exists(condition, ?::jsonpath, jsonb_build_object('f', ?::text))
       order by created_at, id`,
      [projectId, segmentId, FIELD_IS, `segment.${segmentId}`],
    );
  },

  async delete(em: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await em.execute(`delete from segments where project_id = ? and id = ? returning id`, [projectId, id]);
    return rows.length > 0;
  },

  /** Segments and campaigns (FILTERED audiences) whose conditions use a field (or a path under it). */
  async usingField(em: EntityManager, projectId: string, field: string) {
    const params = [FIELD_UNDER, field, `${field}.`];
    const segments = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from segments where project_id = ? and condition is not null
         and jsonb_path_exists(condition, ?::jsonpath, jsonb_build_object('f', ?::text, 'prefix', ?::text))
       order by created_at, id`,
      [projectId, ...params],
    );
    const campaigns = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from campaigns where project_id = ? and audience_type = 'FILTERED' and audience_condition is not null
         and jsonb_path_exists(audience_condition, ?::jsonpath, jsonb_build_object('f', ?::text, 'prefix', ?::text))
       order by created_at, id`,
      [projectId, ...params],
    );
    return { segments, campaigns };
  },

  /** Segments and campaigns (FILTERED audiences) whose conditions use event.<name>. */
  async usingEvent(em: EntityManager, projectId: string, eventName: string) {
    const params = [FIELD_IS, `event.${eventName}`];
    const segments = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from segments where project_id = ? and condition is not null
         and jsonb_path_exists(condition, ?::jsonpath, jsonb_build_object('f', ?::text))
       order by created_at, id`,
      [projectId, ...params],
    );
    const campaigns = await em.execute<Array<{ id: string; name: string }>>(
      `select id, name from campaigns where project_id = ? and audience_type = 'FILTERED' and audience_condition is not null
         and jsonb_path_exists(audience_condition, ?::jsonpath, jsonb_build_object('f', ?::text))
       order by created_at, id`,
      [projectId, ...params],
    );
    return { segments, campaigns };
  },

  /** The live members of a segment, one page (newest contacts first). */
  async members(em: EntityManager, segment: SegmentRow, page: number, pageSize: number) {
    const { sql, params } = await liveMemberFilter(em, segment);
    const [{ n: total }] = await queryRows<{ n: number }>(em, `select count(*)::int as n from contacts c where c.project_id = ? and ${sql}`, [
      segment.projectId,
      ...params,
    ]);
    const rows = await queryRows<ContactTableRow>(
      em,
      `select c.* from contacts c where c.project_id = ? and ${sql} order by c.created_at desc, c.id desc limit ? offset ?`,
      [segment.projectId, ...params, pageSize, (page - 1) * pageSize],
    );
    return { contacts: rows.map(toContact), total };
  },

  /** Recounts the cached memberCount: the live condition for dynamic segments, the member rows for static ones. */
  async refreshCount(em: EntityManager, segment: SegmentRow): Promise<SegmentRow | null> {
    const { sql, params } = await liveMemberFilter(em, segment);
    const rows = await queryRows<SegmentTableRow>(
      em,
      `update segments set member_count = (select count(*) from contacts c where c.project_id = ? and ${sql}), member_count_at = now()
       where id = ? returning *`,
      [segment.projectId, ...params, segment.id],
    );
    return rows.length ? toSegment(rows[0]) : null;
  },

  /**
   * Recomputes a tracked segment. Finding who changed is one ordered walk over the project's
   * contacts (keyset on created_at, id) comparing the compiled condition (set strategy: one hashed
   * subplan per event/email filter) with the member rows, RECOMPUTE_PAGE differences at a time; each
   * page of differences is then reconciled contact by contact (reconcileTrackedSegment re-evaluates
   * them, so a contact that changed in between is still decided right) and its events handed on.
   * Sets memberCount to the result.
   */
  async recompute(
    em: EntityManager,
    segment: SegmentRow,
    options: { emitEvents: boolean; pageSize?: number; onPage?: (events: RecordedEvent[]) => Promise<void> },
  ): Promise<{ added: number; removed: number; total: number; events: RecordedEvent[] }> {
    const tracked = asTracked(segment);
    const segments = await loadReferencedSegments(em, segment.projectId, tracked.condition);
    const compiled = compileCondition(tracked.condition, { projectId: segment.projectId, segments });
    let after: { createdAt: string; id: string } | null = null;
    let added = 0;
    let removed = 0;
    const events: RecordedEvent[] = [];
    const limit = options.pageSize ?? RECOMPUTE_PAGE;
    if (!options.emitEvents) {
      // A baseline (new segment, tracking turned on) emits nothing, so the whole difference is
      // written by one statement over the live set: seconds for a million contacts, where
      // reconciling page by page takes tens of seconds.
      const [row] = await queryRows<{ added: number; removed: number }>(
        em,
        `with live as materialized (select c.id from contacts c where c.project_id = ? and ${compiled.sql}),
         added as (insert into segment_members (segment_id, contact_id) select ?, l.id from live l on conflict do nothing returning 1),
         removed as (delete from segment_members sm where sm.segment_id = ? and not exists (select 1 from live l where l.id = sm.contact_id) returning 1)
         select (select count(*)::int from added) as added, (select count(*)::int from removed) as removed`,
        [segment.projectId, ...compiled.params, segment.id, segment.id],
      );
      added = row.added;
      removed = row.removed;
    }
    while (options.emitEvents) {
      const params: unknown[] = [segment.projectId];
      let keyset = '';
      if (after) {
        keyset = ` and (c.created_at, c.id) > (?::timestamptz, ?::uuid)`;
        params.push(after.createdAt, after.id);
      }
      params.push(...compiled.params, segment.id, limit);
      const differing = await em.execute<Array<{ id: string; created_at: string }>>(
        `select c.id, c.created_at::text as created_at from contacts c
         where c.project_id = ?${keyset}
           and ${compiled.sql} <> exists (select 1 from segment_members sm where sm.segment_id = ? and sm.contact_id = c.id)
         order by c.created_at, c.id limit ?`,
        params,
      );
      if (differing.length) {
        const page = await reconcileTrackedSegment(em, tracked, { kind: 'contacts', ids: differing.map((r) => r.id) }, { emitEvents: options.emitEvents });
        added += page.added;
        removed += page.removed;
        if (options.onPage) await options.onPage(page.events);
        else events.push(...page.events);
      }
      if (differing.length < limit) break;
      const last = differing[differing.length - 1];
      after = { createdAt: last.created_at, id: last.id };
    }
    const [row] = await queryRows<Pick<SegmentTableRow, 'member_count'>>(
      em,
      `update segments set member_count = (select count(*) from segment_members where segment_id = ?), member_count_at = now() where id = ? returning member_count`,
      [segment.id, segment.id],
    );
    return { added, removed, total: row?.member_count ?? 0, events };
  },

  /**
   * Adds contacts (by email) to a static segment; missing contacts are created when asked
   * (subscribed as given, else true). A tracked static segment records entry events.
   */
  async addMembers(em: EntityManager, segment: SegmentRow, contactIds: string[]): Promise<{ added: number; events: RecordedEvent[] }> {
    const rows = await queryRows<{ added: number; events: EventsJson }>(
      em,
      `with added as (
         insert into segment_members (segment_id, contact_id)
         select ?, c.id from contacts c where c.project_id = ? and c.id in (select (jsonb_array_elements_text(?::jsonb))::uuid)
         on conflict do nothing returning contact_id
       ),
       entered as (
         insert into events (project_id, contact_id, name, data, source)
         select ?::uuid, a.contact_id, ?, ?::jsonb, 'SYSTEM' from added a where ?::boolean
         returning id, contact_id, name, created_at
       ),
       counted as (update segments set member_count = member_count + (select count(*) from added), member_count_at = now() where id = ? returning 1)
       select (select count(*)::int from added) as added,
              coalesce((select json_agg(json_build_object('id', e.id, 'name', e.name, 'contactId', e.contact_id, 'createdAt', e.created_at)) from entered e), '[]'::json) as events`,
      [
        segment.id,
        segment.projectId,
        JSON.stringify(contactIds),
        segment.projectId,
        segmentEntryEventName(segment.slug),
        JSON.stringify({ segmentId: segment.id, segmentName: segment.name }),
        segment.trackMembership,
        segment.id,
      ],
    );
    return { added: rows[0].added, events: parseEvents(rows[0].events) };
  },

  async removeMembers(em: EntityManager, segment: SegmentRow, emails: string[]): Promise<{ removed: number; events: RecordedEvent[] }> {
    const rows = await queryRows<{ removed: number; events: EventsJson }>(
      em,
      `with removed as (
         delete from segment_members sm using contacts c
         where sm.segment_id = ? and c.id = sm.contact_id and c.project_id = ? and c.email in (select jsonb_array_elements_text(?::jsonb))
         returning sm.contact_id
       ),
       exited as (
         insert into events (project_id, contact_id, name, data, source)
         select ?::uuid, r.contact_id, ?, ?::jsonb, 'SYSTEM' from removed r where ?::boolean
         returning id, contact_id, name, created_at
       ),
       counted as (update segments set member_count = greatest(0, member_count - (select count(*) from removed)), member_count_at = now() where id = ? returning 1)
       select (select count(*)::int from removed) as removed,
              coalesce((select json_agg(json_build_object('id', e.id, 'name', e.name, 'contactId', e.contact_id, 'createdAt', e.created_at)) from exited e), '[]'::json) as events`,
      [
        segment.id,
        segment.projectId,
        JSON.stringify(emails),
        segment.projectId,
        segmentExitEventName(segment.slug),
        JSON.stringify({ segmentId: segment.id, segmentName: segment.name }),
        segment.trackMembership,
        segment.id,
      ],
    );
    return { removed: rows[0].removed, events: parseEvents(rows[0].events) };
  },
};

/** Events as json_agg of json_build_object returns them: camelCase keys, timestamps as JSON text. */
type EventsJson = Array<Record<string, string>> | string;

function parseEvents(value: EventsJson): RecordedEvent[] {
  const list = typeof value === 'string' ? (JSON.parse(value) as Array<Record<string, string>>) : value;
  return list.map((e) => ({ id: e.id, name: e.name, contactId: e.contactId, createdAt: new Date(e.createdAt) }));
}

/**
 * A boolean SQL expression over contacts `c` true for the segment's members now: the compiled
 * condition for dynamic segments (live, whether tracked or not), the member rows for static ones.
 */
async function liveMemberFilter(em: EntityManager, segment: SegmentRow): Promise<{ sql: string; params: unknown[] }> {
  if (segment.type === 'STATIC' || !segment.condition) {
    return { sql: `c.id in (select sm.contact_id from segment_members sm where sm.segment_id = ?)`, params: [segment.id] };
  }
  const segments = await loadReferencedSegments(em, segment.projectId, segment.condition);
  return compileCondition(segment.condition, { projectId: segment.projectId, segments });
}
