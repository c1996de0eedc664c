import type { EntityManager } from '@mikro-orm/postgresql';
import type { RecordedEvent } from '../contacts/contactRepository';
import { compileCondition, loadReferencedSegments, type ConditionTree } from '../conditions';
import { segmentEntryEventName, segmentExitEventName } from '../events/systemEventNames';

export interface TrackedSegment {
  id: string;
  projectId: string;
  name: string;
  slug: string;
  condition: ConditionTree;
}

/** Which contacts a reconciliation looks at. */
export type ReconcileScope = { kind: 'contacts'; ids: string[] };

export interface ReconcileResult {
  added: number;
  removed: number;
  /** segment.<slug>.entry / .exit events recorded, to hand to eventTriggers.afterEventsRecorded. */
  events: RecordedEvent[];
}

/**
 * Brings segment_members of a tracked dynamic segment in line with its condition for the contacts
 * in scope, in one statement: inserts the members that joined and deletes the ones that left
 * (each change made by exactly one writer, so concurrent reconciliations never emit an event
 * twice), records `segment.<slug>.entry` / `.exit` for them (unless `emitEvents` is false: a new
 * segment's first members did not "join"), and moves the cached memberCount by the difference.
 * The condition is compiled per row (correlated probes), the right shape for a few contacts.
 */
export async function reconcileTrackedSegment(
  em: EntityManager,
  segment: TrackedSegment,
  scope: ReconcileScope,
  options: { emitEvents: boolean },
): Promise<ReconcileResult> {
  const segments = await loadReferencedSegments(em, segment.projectId, segment.condition);
  const compiled = compileCondition(segment.condition, { projectId: segment.projectId, segments, strategy: 'row' });
  const params: unknown[] = [...compiled.params, segment.projectId];
  const scopeSql = `select c.id, ${compiled.sql} as match from contacts c where c.project_id = ? and c.id in (select (jsonb_array_elements_text(?::jsonb))::uuid)`;
  params.push(JSON.stringify(scope.ids));
  const eventData = JSON.stringify({ segmentId: segment.id, segmentName: segment.name });
  // In the order of the placeholders below.
  params.push(
    segment.id, // added
    segment.id, // removed
    segment.projectId,
    segmentEntryEventName(segment.slug),
    eventData,
    options.emitEvents, // entered
    segment.projectId,
    segmentExitEventName(segment.slug),
    eventData,
    options.emitEvents, // exited
    segment.id, // counted
  );
  const [row] = await em.execute(
    `with scope as materialized (${scopeSql}),
     added as (
       insert into segment_members (segment_id, contact_id)
       select ?::uuid, s.id from scope s where s.match
       on conflict do nothing
       returning contact_id
     ),
     removed as (
       delete from segment_members sm using scope s
       where sm.segment_id = ? and sm.contact_id = s.id and not s.match
       returning sm.contact_id
     ),
     entered as (
       insert into events (project_id, contact_id, name, data, source)
       select ?::uuid, a.contact_id, ?, ?::jsonb, 'SYSTEM' from added a where ?::boolean
       returning id, contact_id, name, created_at
     ),
     exited as (
       insert into events (project_id, contact_id, name, data, source)
       select ?::uuid, r.contact_id, ?, ?::jsonb, 'SYSTEM' from removed r where ?::boolean
       returning id, contact_id, name, created_at
     ),
     counted as (
       update segments set member_count = greatest(0, member_count + (select count(*) from added) - (select count(*) from removed))
       where id = ?
       returning 1
     )
     select (select count(*)::int from added) as added,
            (select count(*)::int from removed) as removed,
            coalesce((select json_agg(json_build_object('id', e.id, 'name', e.name, 'contactId', e.contact_id, 'createdAt', e.created_at))
                      from (select * from entered union all select * from exited) e), '[]'::json) as events`,
    params,
  );
  const parse = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
  return {
    added: row.added,
    removed: row.removed,
    events: (parse(row.events) as Array<Record<string, string>>).map((e) => ({
      id: e.id,
      name: e.name,
      contactId: e.contactId,
      createdAt: new Date(e.createdAt),
    })),
  };
}
