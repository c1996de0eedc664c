import type { components } from '../../../client/mailroomClient';

/**
 * A condition tree (a segment's condition, a FILTERED campaign audience) as a person reads it, until
 * the visual condition builder comes: one line per group of the tree, the groups joined by the
 * tree's logic ("OR …" on the next line), a group's filters joined by "and" (the API's semantics:
 * db/conditions/compileCondition.ts), nested trees in parentheses. Pure, so it is unit-tested
 * (test/fast/dashboard/conditionText.test.ts).
 *
 *   email contains "@example.com" and data.plan is "pro"
 *   OR event "signed_up" happened in the last 7 days
 */

type ConditionFilter = NonNullable<components['schemas']['ConditionTree']['groups'][number]['filters']>[number];

/**
 * The API's ConditionTree with its nesting typed: the description can only say "an object" of a
 * group's nested `conditions` (components['schemas']['ConditionTree'] types it as an empty record).
 */
export interface ConditionTree {
  logic: 'AND' | 'OR';
  groups: ConditionGroup[];
}
interface ConditionGroup {
  filters?: ConditionFilter[];
  conditions?: ConditionTree | null;
}

/** A condition as the API answers it (a segment's `condition`), typed with its nesting. */
export function asConditionTree(condition: components['schemas']['ConditionTree']): ConditionTree {
  return condition as unknown as ConditionTree;
}

/** Names of segments a `segment.<id>` filter may name, by id; an unknown id is written as the id. */
export type SegmentNames = ReadonlyMap<string, string>;

export function conditionText(tree: ConditionTree, segmentNames: SegmentNames = new Map()): string {
  const groups = tree.groups.map((group) => groupText(group, segmentNames)).filter((text) => text !== '');
  if (groups.length === 0) return 'No condition (matches no contact)';
  return groups.join(`\n${tree.logic} `);
}

function groupText(group: ConditionGroup, segmentNames: SegmentNames): string {
  const pieces = (group.filters ?? []).map((filter) => filterText(filter, segmentNames));
  if (group.conditions) {
    const nested = group.conditions;
    const text = nested.groups
      .map((g) => groupText(g, segmentNames))
      .filter((t) => t !== '')
      .map((t, _i, all) => (all.length > 1 && t.includes(' and ') ? `(${t})` : t))
      .join(` ${nested.logic.toLowerCase()} `);
    if (text) pieces.push(nested.groups.length > 1 || pieces.length > 0 ? `(${text})` : text);
  }
  return pieces.join(' and ');
}

const FIELD_NAMES: Record<string, string> = { email: 'email', subscribed: 'subscribed', createdAt: 'created', updatedAt: 'updated' };
const DATE_FIELDS = new Set(['createdAt', 'updatedAt']);

/** One filter, its field first: `data.plan is "pro"`, `created is within the last 30 days`. */
export function filterText(filter: ConditionFilter, segmentNames: SegmentNames = new Map()): string {
  const { field, operator, value, unit } = filter;
  if (field.startsWith('segment.')) {
    const id = field.slice('segment.'.length);
    const name = segmentNames.get(id.toLowerCase()) ?? segmentNames.get(id);
    const segment = name === undefined ? `segment ${id}` : `segment "${name}"`;
    return operator === 'notMemberOfSegment' ? `not in ${segment}` : `in ${segment}`;
  }
  if (field.startsWith('event.')) return `event "${field.slice('event.'.length)}" ${triggerPhrase(operator, value, unit)}`;
  if (field.startsWith('email.')) return `an email ${field.slice('email.'.length)} ${triggerPhrase(operator, value, unit)}`;
  return `${FIELD_NAMES[field] ?? field} ${comparisonPhrase(operator, value, unit, DATE_FIELDS.has(field))}`;
}

/** What a comparison operator says of its field (`is "pro"`, `is not set`, `is more than 3 days ago`); the CONDITION steps of workflows use it too. */
export function comparisonPhrase(operator: string, value: unknown, unit: unknown, isDate = false): string {
  switch (operator) {
    case 'equals':
      return value === null ? 'is not set' : `is ${valueText(value)}`;
    case 'notEquals':
      return value === null ? 'is set' : `is not ${valueText(value)}`;
    case 'contains':
      return `contains ${valueText(value)}`;
    case 'notContains':
      return `does not contain ${valueText(value)}`;
    case 'greaterThan':
      return `${isDate ? 'is after' : 'is greater than'} ${valueText(value)}`;
    case 'lessThan':
      return `${isDate ? 'is before' : 'is less than'} ${valueText(value)}`;
    case 'greaterThanOrEqual':
      return `${isDate ? 'is on or after' : 'is at least'} ${valueText(value)}`;
    case 'lessThanOrEqual':
      return `${isDate ? 'is on or before' : 'is at most'} ${valueText(value)}`;
    case 'exists':
      return 'is set';
    case 'notExists':
      return 'is not set';
    case 'within':
      return `is within the last ${amountText(value, unit)}`;
    case 'olderThan':
      return `is more than ${amountText(value, unit)} ago`;
    default:
      return value === undefined ? operator : `${operator} ${valueText(value)}`;
  }
}

function triggerPhrase(operator: string, value: unknown, unit: unknown): string {
  switch (operator) {
    case 'triggered':
      return 'happened';
    case 'notTriggered':
      return 'never happened';
    case 'triggeredWithin':
      return `happened in the last ${amountText(value, unit)}`;
    case 'triggeredOlderThan':
      return `happened more than ${amountText(value, unit)} ago`;
    case 'notTriggeredWithin':
      return `did not happen in the last ${amountText(value, unit)}`;
    default:
      return comparisonPhrase(operator, value, unit);
  }
}

/** A value as written in the condition: text quoted, numbers and true/false as they are, lists joined. */
export function valueText(value: unknown): string {
  if (typeof value === 'string') return `"${value}"`;
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return value.map(valueText).join(', ');
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

/** `7` `days` → "7 days"; `1` `days` → "1 day". */
export function amountText(value: unknown, unit: unknown): string {
  const units = typeof unit === 'string' && unit ? unit : 'days';
  const amount = typeof value === 'number' || typeof value === 'string' ? String(value) : valueText(value);
  return `${amount} ${amount === '1' && units.endsWith('s') ? units.slice(0, -1) : units}`;
}
