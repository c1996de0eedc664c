import type { EntityManager } from '@mikro-orm/postgresql';
import { referencedSegmentIds, type ConditionTree } from './conditionTree';
import type { SegmentDefinition } from './compileCondition';
import { queryRows } from '../sql/rows';

/** A `segments` row as loadReachable selects it. */
interface SegmentDefinitionRow {
  id: string;
  type: SegmentDefinition['type'];
  track_membership: boolean;
  /** jsonb, parsed by the driver. */
  condition: ConditionTree | string | null;
}

function toDefinition(row: SegmentDefinitionRow): SegmentDefinition {
  return {
    id: row.id,
    type: row.type,
    trackMembership: row.track_membership,
    condition: typeof row.condition === 'string' ? (JSON.parse(row.condition) as ConditionTree) : (row.condition ?? null),
  };
}

/**
 * Segments of the project reachable from a tree through `segment.<id>` filters, following the
 * conditions of the segments `follow` accepts. Ids of other projects are never loaded. Terminates:
 * each round loads only ids not seen before.
 */
async function loadReachable(
  em: EntityManager,
  projectId: string,
  tree: ConditionTree | null,
  follow: (segment: SegmentDefinition) => boolean,
): Promise<Map<string, SegmentDefinition>> {
  const found = new Map<string, SegmentDefinition>();
  const asked = new Set<string>();
  let wanted = tree ? referencedSegmentIds(tree) : [];
  while (wanted.length) {
    for (const id of wanted) asked.add(id);
    const rows = await queryRows<SegmentDefinitionRow>(
      em,
      `select id, type, track_membership, condition from segments where project_id = ? and id in (select (jsonb_array_elements_text(?::jsonb))::uuid)`,
      [projectId, JSON.stringify(wanted)],
    );
    const next = new Set<string>();
    for (const row of rows) {
      const definition = toDefinition(row);
      found.set(definition.id, definition);
      if (definition.condition && follow(definition)) for (const id of referencedSegmentIds(definition.condition)) if (!asked.has(id)) next.add(id);
    }
    wanted = [...next];
  }
  return found;
}

/**
 * What compileCondition needs for a tree's `segment.<id>` filters: the referenced segments, and
 * the ones those refer to as far as they are inlined (untracked dynamic segments; the others are
 * read from segment_members). A missing id is a deleted segment (or another project's).
 */
export function loadReferencedSegments(em: EntityManager, projectId: string, tree: ConditionTree | null): Promise<Map<string, SegmentDefinition>> {
  return loadReachable(em, projectId, tree, (s) => s.type === 'DYNAMIC' && !s.trackMembership);
}

/** Every segment reachable through references, whatever its kind: for cycle detection. */
export function loadReferenceGraph(em: EntityManager, projectId: string, tree: ConditionTree): Promise<Map<string, SegmentDefinition>> {
  return loadReachable(em, projectId, tree, () => true);
}
