import type { EntityManager } from '@mikro-orm/postgresql';
import type { FieldError } from '../../lib/errors';
import { conditionTreeIssues, filtersOf, parseField, referencedSegmentIds, type ConditionTree } from './conditionTree';
import { compileCondition, type SegmentDefinition } from './compileCondition';
import { loadReferenceGraph, loadReferencedSegments } from './segmentReferences';

export { conditionTreeSchema, CONDITION_LIMITS, type ConditionTree, type ConditionGroup, type ConditionFilter } from './conditionTree';
export { compileCondition, UnresolvedSegmentReference, type CompileOptions, type CompiledCondition, type SegmentDefinition } from './compileCondition';
export { loadReferencedSegments } from './segmentReferences';

/**
 * Every problem of a tree, as the `errors` items of a 422: the checks of conditionTreeSchema,
 * then its segment references: a segment that does not exist in the project, the segment
 * itself (`selfSegmentId`), or one whose own references lead back to it. Paths are relative to
 * the tree (`groups.0.filters.1.operator`) unless `path` gives the body field it sits in.
 */
export async function validateConditionTree(
  em: EntityManager,
  projectId: string,
  tree: unknown,
  options: { selfSegmentId?: string; path?: string } = {},
): Promise<FieldError[]> {
  const prefix = options.path ? `${options.path}.` : '';
  const issues = conditionTreeIssues(tree);
  if (issues.length) {
    return issues.map((i) => ({
      field: i.path.length ? prefix + i.path.join('.') : options.path || '(body)',
      message: i.message,
      code: i.code,
      ...(i.received !== undefined ? { received: i.received } : {}),
    }));
  }
  const valid = tree as ConditionTree;
  if (!referencedSegmentIds(valid).length) return [];
  const graph = await loadReferenceGraph(em, projectId, valid);
  const self = options.selfSegmentId?.toLowerCase();

  /** Whether `from`'s references reach `target` (through any number of segments). */
  const reaches = (from: string, target: string, seen = new Set<string>()): boolean => {
    if (from === target) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    const condition = graph.get(from)?.condition;
    return condition ? referencedSegmentIds(condition).some((id) => reaches(id, target, seen)) : false;
  };

  const errors: FieldError[] = [];
  for (const { filter, path } of filtersOf(valid)) {
    const ref = parseField(filter.field);
    if (ref?.kind !== 'segment') continue;
    const field = `${prefix}${path}.field`;
    if (self && ref.segmentId === self) {
      errors.push({ field, message: 'A segment cannot refer to itself', code: 'custom' });
    } else if (!graph.has(ref.segmentId)) {
      errors.push({ field, message: `Segment not found: ${ref.segmentId}`, code: 'custom' });
    } else if (self && reaches(ref.segmentId, self)) {
      errors.push({ field, message: `Circular reference: segment ${ref.segmentId} refers back to this segment`, code: 'custom' });
    }
  }
  return errors;
}

/** Whether one contact matches a tree now (the same compiler, one correlated row). */
export async function contactMatches(em: EntityManager, projectId: string, contactId: string, tree: ConditionTree): Promise<boolean> {
  const segments = await loadReferencedSegments(em, projectId, tree);
  const compiled = compileCondition(tree, { projectId, segments, strategy: 'row' });
  const rows = await em.execute(`select ${compiled.sql} as matches from contacts c where c.project_id = ? and c.id = ?`, [
    ...compiled.params,
    projectId,
    contactId,
  ]);
  return rows.length > 0 && rows[0].matches === true;
}

/**
 * Whether a tree holds for `data` taken as a contact's data (a CONDITION step's execution
 * context): the same compiler, on one row that exists only in the statement. The tree may not
 * refer to segments.
 */
export async function dataMatches(em: EntityManager, projectId: string, tree: ConditionTree, data: Record<string, unknown>): Promise<boolean> {
  const compiled = compileCondition(tree, { projectId, strategy: 'row' });
  const rows = await em.execute(`select ${compiled.sql} as matches from (select ?::jsonb as data) c`, [...compiled.params, JSON.stringify(data)]);
  return rows[0]?.matches === true;
}

export interface SegmentForMembers {
  id: string;
  projectId: string;
  type: 'DYNAMIC' | 'STATIC';
  trackMembership: boolean;
  condition: ConditionTree | null;
}

/**
 * A query selecting `contact_id` of a segment's members: segment_members for STATIC and tracked
 * DYNAMIC segments, the compiled condition otherwise. A condition with `segment.<id>` filters
 * needs `segments` (loadReferencedSegments), or use segmentMemberSqlFor, which loads them.
 */
export function segmentMemberSql(segment: SegmentForMembers, segments?: ReadonlyMap<string, SegmentDefinition>): { sql: string; params: unknown[] } {
  if (segment.type === 'STATIC' || segment.trackMembership || !segment.condition) {
    return { sql: `select sm.contact_id from segment_members sm where sm.segment_id = ?`, params: [segment.id] };
  }
  const compiled = compileCondition(segment.condition, { projectId: segment.projectId, segments });
  return { sql: `select c.id as contact_id from contacts c where c.project_id = ? and ${compiled.sql}`, params: [segment.projectId, ...compiled.params] };
}

/** segmentMemberSql with the referenced segments loaded. */
export async function segmentMemberSqlFor(em: EntityManager, segment: SegmentForMembers): Promise<{ sql: string; params: unknown[] }> {
  const segments = await loadReferencedSegments(em, segment.projectId, segment.type === 'DYNAMIC' && !segment.trackMembership ? segment.condition : null);
  return segmentMemberSql(segment, segments);
}
