import { z } from 'zod';
import { customFieldPath } from '../contacts/contactFields';

/**
 * The condition tree of segments and campaign audiences (specification "Condition tree",
 * contract section 10): its shape, its vocabulary, and the checks that need no database.
 */
export interface ConditionFilter {
  field: string;
  operator: string;
  value?: unknown;
  unit?: string;
}

export interface ConditionGroup {
  filters?: ConditionFilter[];
  conditions?: ConditionTree;
}

export interface ConditionTree {
  logic: 'AND' | 'OR';
  groups: ConditionGroup[];
}

/**
 * Bounds of a tree, so that no request can make the compiled SQL unreasonably large: nesting
 * (`conditions` inside a group) at most MAX_DEPTH trees deep, at most MAX_FILTERS filters and
 * MAX_GROUPS groups in the whole tree.
 */
export const CONDITION_LIMITS = { MAX_DEPTH: 5, MAX_FILTERS: 100, MAX_GROUPS: 50, MAX_STRING: 1000, MAX_AMOUNT: 100_000 } as const;

export const OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'exists',
  'notExists',
  'within',
  'olderThan',
  'triggered',
  'notTriggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggeredWithin',
  'memberOfSegment',
  'notMemberOfSegment',
] as const;
export type Operator = (typeof OPERATORS)[number];

export const UNITS = ['minutes', 'hours', 'days', 'weeks', 'months'] as const;
export type Unit = (typeof UNITS)[number];

export const EMAIL_ACTIVITIES = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'] as const;
export type EmailActivity = (typeof EMAIL_ACTIVITIES)[number];

/** What a filter's `field` names. */
export type FieldRef =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'date'; column: 'created_at' | 'updated_at' }
  | { kind: 'data'; path: string[] }
  | { kind: 'event'; name: string }
  | { kind: 'emailActivity'; activity: EmailActivity }
  | { kind: 'segment'; segmentId: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function parseField(field: string): FieldRef | null {
  if (field === 'email') return { kind: 'email' };
  if (field === 'subscribed') return { kind: 'subscribed' };
  if (field === 'createdAt') return { kind: 'date', column: 'created_at' };
  if (field === 'updatedAt') return { kind: 'date', column: 'updated_at' };
  if (field.startsWith('data.')) {
    const path = customFieldPath(field);
    return path ? { kind: 'data', path } : null;
  }
  if (field.startsWith('event.')) {
    const name = field.slice(6);
    return name.length >= 1 && name.length <= 200 ? { kind: 'event', name } : null;
  }
  if (field.startsWith('email.')) {
    const activity = field.slice(6) as EmailActivity;
    return EMAIL_ACTIVITIES.includes(activity) ? { kind: 'emailActivity', activity } : null;
  }
  if (field.startsWith('segment.')) {
    const id = field.slice(8);
    return UUID.test(id) ? { kind: 'segment', segmentId: id.toLowerCase() } : null;
  }
  return null;
}

const COMPARISONS: Operator[] = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'];
const AGES: Operator[] = ['within', 'olderThan'];
const PRESENCE: Operator[] = ['exists', 'notExists'];
const TRIGGERS: Operator[] = ['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'];

/** The operators each kind of field takes. */
export const OPERATORS_BY_FIELD: Record<FieldRef['kind'], Operator[]> = {
  email: ['equals', 'notEquals', 'contains', 'notContains', ...PRESENCE],
  subscribed: ['equals', 'notEquals', ...PRESENCE],
  date: ['equals', 'notEquals', ...COMPARISONS, ...AGES, ...PRESENCE],
  data: ['equals', 'notEquals', 'contains', 'notContains', ...COMPARISONS, ...PRESENCE, ...AGES],
  event: TRIGGERS,
  emailActivity: TRIGGERS,
  segment: ['memberOfSegment', 'notMemberOfSegment'],
};

/** Operators whose value is an amount of `unit`s. */
export const AMOUNT_OPERATORS: Operator[] = ['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'];
/** Operators that take no value. */
export const VALUELESS_OPERATORS: Operator[] = ['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment'];

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}(:?\d{2})?)?$/;

/**
 * A date value: `YYYY-MM-DD` is the whole UTC day [start, end); an ISO 8601 date-time is one
 * instant (read as UTC when it has no offset). Null for anything else.
 */
export function parseDateValue(value: unknown): { start: Date; end: Date | null } | null {
  if (typeof value !== 'string') return null;
  const day = DAY.exec(value);
  if (day) {
    const start = new Date(Date.UTC(+day[1], +day[2] - 1, +day[3]));
    if (start.getUTCFullYear() !== +day[1] || start.getUTCMonth() !== +day[2] - 1 || start.getUTCDate() !== +day[3]) return null;
    return { start, end: new Date(start.getTime() + 86_400_000) };
  }
  if (!DATE_TIME.test(value)) return null;
  const hasOffset = /(Z|z|[+-]\d{2}(:?\d{2})?)$/.test(value.slice(10));
  const instant = new Date(hasOffset ? value : `${value.replace(' ', 'T')}Z`);
  // PostgreSQL has no year 0; years before 100 are no one's real dates either.
  return Number.isNaN(instant.getTime()) || instant.getUTCFullYear() < 100 ? null : { start: instant, end: null };
}

export interface TreeIssue {
  path: (string | number)[];
  message: string;
  code: string;
  received?: unknown;
}

/** Every problem of a tree that needs no database, with its path inside the tree. */
export function conditionTreeIssues(tree: unknown): TreeIssue[] {
  const issues: TreeIssue[] = [];
  let filters = 0;
  let groups = 0;
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

  function walkTree(node: unknown, path: (string | number)[], depth: number) {
    if (!isObject(node)) {
      issues.push({
        path,
        message: 'A condition must be an object with logic and groups',
        code: 'invalid_type',
        received: node === null ? 'null' : Array.isArray(node) ? 'array' : typeof node,
      });
      return;
    }
    if (depth > CONDITION_LIMITS.MAX_DEPTH) {
      issues.push({ path, message: `Conditions nest at most ${CONDITION_LIMITS.MAX_DEPTH} levels deep`, code: 'too_big' });
      return;
    }
    if (node.logic === undefined)
      issues.push({ path: [...path, 'logic'], message: 'logic is required (AND or OR)', code: 'invalid_type', received: 'undefined' });
    else if (node.logic !== 'AND' && node.logic !== 'OR') {
      issues.push({ path: [...path, 'logic'], message: "logic must be 'AND' or 'OR'", code: 'invalid_enum_value', received: node.logic });
    }
    if (!Array.isArray(node.groups)) {
      issues.push({
        path: [...path, 'groups'],
        message: 'groups must be an array',
        code: 'invalid_type',
        received: node.groups === undefined ? 'undefined' : typeof node.groups,
      });
      return;
    }
    if (node.groups.length === 0) issues.push({ path: [...path, 'groups'], message: 'A condition needs at least one group', code: 'too_small' });
    node.groups.forEach((group, i) => walkGroup(group, [...path, 'groups', i], depth));
  }

  function walkGroup(group: unknown, path: (string | number)[], depth: number) {
    if (++groups > CONDITION_LIMITS.MAX_GROUPS) {
      if (groups === CONDITION_LIMITS.MAX_GROUPS + 1)
        issues.push({ path, message: `A condition holds at most ${CONDITION_LIMITS.MAX_GROUPS} groups`, code: 'too_big' });
      return;
    }
    if (!isObject(group)) {
      issues.push({ path, message: 'A group must be an object with filters and/or conditions', code: 'invalid_type', received: typeof group });
      return;
    }
    const hasFilters = Array.isArray(group.filters) && group.filters.length > 0;
    const hasConditions = group.conditions !== undefined && group.conditions !== null;
    if (group.filters !== undefined && !Array.isArray(group.filters)) {
      issues.push({ path: [...path, 'filters'], message: 'filters must be an array', code: 'invalid_type', received: typeof group.filters });
    } else if (!hasFilters && !hasConditions) {
      issues.push({ path, message: 'A group needs filters or nested conditions', code: 'custom' });
    }
    if (Array.isArray(group.filters)) group.filters.forEach((filter, i) => walkFilter(filter, [...path, 'filters', i]));
    if (hasConditions) walkTree(group.conditions, [...path, 'conditions'], depth + 1);
  }

  function walkFilter(filter: unknown, path: (string | number)[]) {
    if (++filters > CONDITION_LIMITS.MAX_FILTERS) {
      if (filters === CONDITION_LIMITS.MAX_FILTERS + 1)
        issues.push({ path, message: `A condition holds at most ${CONDITION_LIMITS.MAX_FILTERS} filters`, code: 'too_big' });
      return;
    }
    if (!isObject(filter)) {
      issues.push({ path, message: 'A filter must be an object with field and operator', code: 'invalid_type', received: typeof filter });
      return;
    }
    let field: FieldRef | null = null;
    if (typeof filter.field !== 'string') {
      issues.push({
        path: [...path, 'field'],
        message: 'field is required',
        code: 'invalid_type',
        received: filter.field === undefined ? 'undefined' : typeof filter.field,
      });
    } else {
      field = parseField(filter.field);
      if (!field) {
        issues.push({
          path: [...path, 'field'],
          message: `Unknown field "${filter.field.slice(0, 120)}": use email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.<${EMAIL_ACTIVITIES.join('|')}> or segment.<segmentId>`,
          code: 'custom',
        });
      }
    }
    if (typeof filter.operator !== 'string' || !OPERATORS.includes(filter.operator as Operator)) {
      issues.push({
        path: [...path, 'operator'],
        message: filter.operator === undefined ? 'operator is required' : `Unknown operator; expected one of ${OPERATORS.join(', ')}`,
        code: filter.operator === undefined ? 'invalid_type' : 'invalid_enum_value',
        received: filter.operator === undefined ? 'undefined' : filter.operator,
      });
      return;
    }
    const operator = filter.operator as Operator;
    if (!field) return;
    if (!OPERATORS_BY_FIELD[field.kind].includes(operator)) {
      issues.push({
        path: [...path, 'operator'],
        message: `The operator ${operator} does not apply to ${String(filter.field)}; it takes ${OPERATORS_BY_FIELD[field.kind].join(', ')}`,
        code: 'custom',
      });
      return;
    }
    if (AMOUNT_OPERATORS.includes(operator)) {
      const value = typeof filter.value === 'string' && /^\d+$/.test(filter.value) ? Number(filter.value) : filter.value;
      if (filter.value === undefined || filter.value === null) {
        issues.push({
          path: [...path, 'value'],
          message: `${operator} needs a value: a whole number of units`,
          code: 'invalid_type',
          received: String(filter.value),
        });
      } else if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > CONDITION_LIMITS.MAX_AMOUNT) {
        issues.push({ path: [...path, 'value'], message: `${operator} needs a whole number from 1 to ${CONDITION_LIMITS.MAX_AMOUNT}`, code: 'custom' });
      }
      if (filter.unit === undefined || filter.unit === null) {
        issues.push({ path: [...path, 'unit'], message: `${operator} needs a unit: ${UNITS.join(', ')}`, code: 'invalid_type', received: 'undefined' });
      } else if (!UNITS.includes(filter.unit as Unit)) {
        issues.push({
          path: [...path, 'unit'],
          message: `Unknown unit; expected one of ${UNITS.join(', ')}`,
          code: 'invalid_enum_value',
          received: filter.unit,
        });
      }
      return;
    }
    if (VALUELESS_OPERATORS.includes(operator)) return;
    issues.push(...valueIssues(field, operator, filter.value, [...path, 'value']));
  }

  walkTree(tree, [], 1);
  return issues;
}

function valueIssues(field: FieldRef, operator: Operator, value: unknown, path: (string | number)[]): TreeIssue[] {
  const issue = (message: string, code = 'custom'): TreeIssue[] => [{ path, message, code }];
  if (value === undefined) return [{ path, message: `${operator} needs a value`, code: 'invalid_type', received: 'undefined' }];
  if (typeof value === 'string' && value.length > CONDITION_LIMITS.MAX_STRING)
    return issue(`A value is at most ${CONDITION_LIMITS.MAX_STRING} characters`, 'too_big');
  switch (field.kind) {
    case 'email':
      return typeof value === 'string' ? [] : issue('email is compared with a string');
    case 'subscribed':
      return typeof value === 'boolean' || value === 'true' || value === 'false' ? [] : issue('subscribed is compared with true or false');
    case 'date':
      return parseDateValue(value) ? [] : issue('A date is compared with YYYY-MM-DD (the whole UTC day) or an ISO 8601 date-time', 'invalid_string');
    case 'data': {
      if (value === null) return operator === 'equals' || operator === 'notEquals' ? [] : issue(`${operator} needs a value that is not null`);
      if (operator === 'equals' || operator === 'notEquals' || operator === 'contains' || operator === 'notContains') {
        if (typeof value === 'object' && JSON.stringify(value).length > CONDITION_LIMITS.MAX_STRING)
          return issue(`A value is at most ${CONDITION_LIMITS.MAX_STRING} characters as JSON`, 'too_big');
        if (operator.includes('ontains') && typeof value === 'object') return issue(`${operator} takes a string, number or boolean`);
        return [];
      }
      // greaterThan and the like: a number, a date, or a string compared as text.
      return typeof value === 'number' || typeof value === 'string' ? [] : issue(`${operator} compares with a number, a date or a string`);
    }
    default:
      return [];
  }
}

const fieldRefinedTree = z.custom<ConditionTree>(() => true);

/**
 * The condition tree as a request-body schema: a tree passing every check of
 * conditionTreeIssues (unknown field or operator, an operator that does not fit its field, a
 * missing value or unit, the size bounds), each reported at its path (`groups.0.filters.1.operator`).
 */
export const conditionTreeSchema = fieldRefinedTree.superRefine((tree, ctx) => {
  for (const issue of conditionTreeIssues(tree)) {
    ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, params: { code: issue.code } });
  }
}) as unknown as z.ZodType<ConditionTree, z.ZodTypeDef, unknown>;

/** Every filter of a tree with its path, depth first (nested trees included). */
export function* filtersOf(tree: ConditionTree, path = ''): Generator<{ filter: ConditionFilter; path: string }> {
  for (const [i, group] of tree.groups.entries()) {
    for (const [j, filter] of (group.filters ?? []).entries()) yield { filter, path: `${path}groups.${i}.filters.${j}` };
    if (group.conditions) yield* filtersOf(group.conditions, `${path}groups.${i}.conditions.`);
  }
}

/** The segment ids a tree refers to (segment.<id> fields). */
export function referencedSegmentIds(tree: ConditionTree): string[] {
  const ids = new Set<string>();
  for (const { filter } of filtersOf(tree)) {
    const ref = parseField(filter.field);
    if (ref?.kind === 'segment') ids.add(ref.segmentId);
  }
  return [...ids];
}
