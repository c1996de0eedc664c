import type { EntityManager } from '@mikro-orm/postgresql';
import { referencedSegmentIds, type ConditionTree } from './conditionTree';
import type { SegmentDefinition } from './compileCondition';

function toDefinition(row: Record<string, any>): SegmentDefinition {
  return {
    id: row.id,
    type: row.type,
    trackMembership: row.track_membership,
    condition: typeof row.condition === 'string' ? JSON.parse(row.condition) : (row.condition ?? null),
  };
}

/**
 * The segments of the project a tree refers to, and the ones those refer to, and so on: what
 * compileCondition needs for `segment.<id>` filters. Ids of other projects are not loaded (they
 * compile as a segment nobody is a member of; validation refuses them).
 */
export async function loadReferencedSegments(em: EntityManager, projectId: string, tree: ConditionTree | null): Promise<Map<string, SegmentDefinition>> {
  const found = new Map<string, SegmentDefinition>();
  let wanted = tree ? referencedSegmentIds(tree) : [];
  // Bounded: a chain of references cannot be longer than the project's segments.
  while (wanted.length) {
    const rows = await em.execute(
      `select id, type, track_membership, condition from segments where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid)`,
      [projectId, JSON.stringify(wanted)],
    );
    const next = new Set<string>();
    for (const row of rows) {
      const definition = toDefinition(row);
      found.set(definition.id, definition);
      // Only untracked dynamic segments are inlined; the others are read from segment_members.
      if (definition.type === 'DYNAMIC' && !definition.trackMembership && definition.condition) {
        for (const id of referencedSegmentIds(definition.condition)) if (!found.has(id)) next.add(id);
      }
    }
    for (const id of wanted) if (!found.has(id)) next.delete(id);
    wanted = [...next].filter((id) => !found.has(id));
  }
  return found;
}

/**
 * Every segment reachable from a tree through references, whatever the segment's kind (a
 * reference to a tracked segment still depends on its condition): for cycle detection.
 */
export async function loadReferenceGraph(em: EntityManager, projectId: string, tree: ConditionTree): Promise<Map<string, SegmentDefinition>> {
  const found = new Map<string, SegmentDefinition>();
  let wanted = referencedSegmentIds(tree);
  while (wanted.length) {
    const rows = await em.execute(
      `select id, type, track_membership, condition from segments where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid)`,
      [projectId, JSON.stringify(wanted)],
    );
    const next = new Set<string>();
    for (const row of rows) {
      const definition = toDefinition(row);
      found.set(definition.id, definition);
      if (definition.condition) for (const id of referencedSegmentIds(definition.condition)) next.add(id);
    }
    wanted = [...next].filter((id) => !found.has(id) && !wanted.includes(id));
  }
  return found;
}
