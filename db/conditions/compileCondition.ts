import { parseDateValue, parseField, type ConditionFilter, type ConditionTree, type FieldRef, type Operator, type Unit } from './conditionTree';
import { textArrayLiteral } from '../sql/textArrayLiteral';

/** What compiling a `segment.<id>` reference needs to know of that segment. */
export interface SegmentDefinition {
  id: string;
  type: 'DYNAMIC' | 'STATIC';
  trackMembership: boolean;
  condition: ConditionTree | null;
}

export interface CompileOptions {
  projectId: string;
  /**
   * The segments the tree refers to, transitively (loadReferencedSegments). Needed as soon as a
   * tree has a `segment.<id>` filter: an untracked dynamic segment is evaluated by inlining its
   * own condition. A referenced id missing from the map is a deleted segment: nobody is a member.
   */
  segments?: ReadonlyMap<string, SegmentDefinition>;
  /**
   * `set` (default) for queries over a whole project: event, email and membership filters become
   * `c.id in (select contact_id ...)`, one hashed subplan or semi-join per filter. `row` for one
   * contact or a few: correlated `exists (... where contact_id = c.id)` probes.
   */
  strategy?: 'set' | 'row';
}

export interface CompiledCondition {
  sql: string;
  params: unknown[];
}

export class UnresolvedSegmentReference extends Error {
  constructor(readonly segmentId: string) {
    super(`compileCondition: the tree refers to segment ${segmentId}; pass options.segments (loadReferencedSegments) to compile it`);
    this.name = 'UnresolvedSegmentReference';
  }
}

const INTERVAL_UNITS: Record<Unit, string> = { minutes: 'minutes', hours: 'hours', days: 'days', weeks: 'weeks', months: 'months' };

/** Columns of emails per activity: a fixed list, never caller text. */
const EMAIL_COLUMNS = {
  sent: 'sent_at',
  delivered: 'delivered_at',
  opened: 'opened_at',
  clicked: 'clicked_at',
  bounced: 'bounced_at',
  complained: 'complained_at',
} as const;

/** `{ a: { b: value } }` for a path a.b: what `c.data @> ?` tests for equality of a leaf. */
function containmentOf(path: string[], value: unknown): string {
  let doc: unknown = value;
  for (let i = path.length - 1; i >= 0; i--) doc = { [path[i]]: doc };
  return JSON.stringify(doc);
}

const NUMERIC_TEXT = /^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$/;

/**
 * The one compiler of condition trees into SQL: a boolean expression over the contacts table
 * aliased `c`, every value (and every data path and event name) bound as a parameter.
 *
 * Semantics where the specification is silent (also in the notes):
 * - Negations (`notEquals`, `notContains`, `notExists`, `notTriggered…`, `notMemberOfSegment`)
 *   hold for contacts without the field.
 * - `email` compares case-insensitively; `contains` / `notContains` are case-insensitive
 *   substring tests on any text; `equals` on data is exact.
 * - data equality: a number equals a stored number or numeric string of the same value (42 =
 *   "42" = 42.0, both ways); a boolean equals true/false or "true"/"false"; a string equals the
 *   stored value's text form; `null` means "has no value" (equals null = notExists).
 * - data comparisons: a number compares numerically with stored numbers and numeric strings; a
 *   date (YYYY-MM-DD or ISO date-time) with stored ISO dates; any other string as text (C order).
 * - `contains` on a stored array tests for the element.
 * - Dates: `YYYY-MM-DD` is the whole UTC day: equals = within it, greaterThan = after it,
 *   lessThan = before it, greaterThanOrEqual = from its start, lessThanOrEqual = until its end.
 * - `triggeredOlderThan N` = at least one occurrence longer than N ago; `notTriggeredWithin N`
 *   = none in the last N (also true when never triggered).
 */
export function compileCondition(tree: ConditionTree, options: CompileOptions): CompiledCondition {
  const params: unknown[] = [];
  const p = (value: unknown) => {
    params.push(value);
    return '?';
  };
  const strategy = options.strategy ?? 'set';

  function tree_(node: ConditionTree, inlining: string[]): string {
    const parts = node.groups.map((group) => {
      const pieces = (group.filters ?? []).map((f) => filter(f, inlining));
      if (group.conditions) pieces.push(tree_(group.conditions, inlining));
      return pieces.length === 1 ? pieces[0] : `(${pieces.join(' and ')})`;
    });
    if (!parts.length) return 'false';
    return parts.length === 1 ? parts[0] : `(${parts.join(node.logic === 'OR' ? ' or ' : ' and ')})`;
  }

  const not = (sql: string) => `(not coalesce(${sql}, false))`;

  function filter(f: ConditionFilter, inlining: string[]): string {
    const ref = parseField(f.field);
    if (!ref) throw new Error(`compileCondition: unknown field ${f.field} (validate the tree first)`);
    const op = f.operator as Operator;
    switch (ref.kind) {
      case 'email':
        return emailFilter(op, f.value);
      case 'subscribed':
        return subscribedFilter(op, f.value);
      case 'date':
        return dateFilter(`c.${ref.column}`, op, f);
      case 'data':
        return dataFilter(ref.path, op, f);
      case 'event':
      case 'emailActivity':
        return activityFilter(ref, op, f);
      case 'segment':
        return segmentFilter(ref.segmentId, op, inlining);
    }
  }

  function emailFilter(op: Operator, value: unknown): string {
    // conditionTreeIssues lets only a string through; an object never reads as '[object Object]'.
    const text = (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '').trim().toLowerCase();
    switch (op) {
      case 'equals':
        return `(c.email = ${p(text)})`;
      case 'notEquals':
        return `(c.email <> ${p(text)})`;
      case 'contains':
        // Stored emails are lower-case; `like` with the trigram index of contacts.email.
        return `(c.email like ${p(`%${text.replace(/[\\%_]/g, '\\$&')}%`)})`;
      case 'notContains':
        return `(c.email not like ${p(`%${text.replace(/[\\%_]/g, '\\$&')}%`)})`;
      case 'exists':
        return 'true';
      case 'notExists':
        return 'false';
      default:
        throw new Error(`compileCondition: ${op} on email`);
    }
  }

  function subscribedFilter(op: Operator, value: unknown): string {
    const wanted = value === true || value === 'true';
    if (op === 'equals') return `(c.subscribed = ${p(wanted)})`;
    if (op === 'notEquals') return `(c.subscribed <> ${p(wanted)})`;
    return op === 'exists' ? 'true' : 'false';
  }

  function interval(f: ConditionFilter): string {
    return `(now() - ${p(`${Number(f.value)} ${INTERVAL_UNITS[f.unit as Unit]}`)}::interval)`;
  }

  /** A comparison of a timestamptz expression (built by `col()`, called once per use). */
  function timeComparison(col: () => string, op: Operator, f: ConditionFilter): string {
    if (op === 'within') return `(${col()} >= ${interval(f)})`;
    if (op === 'olderThan') return `(${col()} < ${interval(f)})`;
    const date = parseDateValue(f.value)!;
    const at = (d: Date) => `${p(d.toISOString())}::timestamptz`;
    const { start, end } = date;
    switch (op) {
      case 'equals':
        return end ? `(${col()} >= ${at(start)} and ${col()} < ${at(end)})` : `(${col()} = ${at(start)})`;
      case 'notEquals':
        return not(end ? `(${col()} >= ${at(start)} and ${col()} < ${at(end)})` : `(${col()} = ${at(start)})`);
      case 'greaterThan':
        return `(${col()} ${end ? '>=' : '>'} ${at(end ?? start)})`;
      case 'greaterThanOrEqual':
        return `(${col()} >= ${at(start)})`;
      case 'lessThan':
        return `(${col()} < ${at(start)})`;
      case 'lessThanOrEqual':
        return `(${col()} ${end ? '<' : '<='} ${at(end ?? start)})`;
      default:
        throw new Error(`compileCondition: ${op} on a date`);
    }
  }

  function dateFilter(column: string, op: Operator, f: ConditionFilter): string {
    if (op === 'exists') return 'true';
    if (op === 'notExists') return 'false';
    return timeComparison(() => column, op, f);
  }

  function dataFilter(path: string[], op: Operator, f: ConditionFilter): string {
    const v = () => `(c.data #> ${p(textArrayLiteral(path))}::text[])`;
    const has = (doc: unknown) => `(c.data @> ${p(containmentOf(path, doc))}::jsonb)`;
    const value = f.value;
    const exists = () => `(coalesce(jsonb_typeof(${v()}), 'null') <> 'null')`;

    const equals = (): string => {
      if (value === null) return not(exists());
      if (typeof value === 'number') {
        return `(case jsonb_typeof(${v()}) when 'number' then (${v()})::numeric = ${p(value)} when 'string' then mailroom_jsonb_numeric(${v()}) = ${p(value)} else false end)`;
      }
      if (typeof value === 'boolean') return `(${has(value)} or ${has(String(value))})`;
      if (typeof value === 'string') {
        const date = parseDateValue(value);
        if (date?.end) {
          return `(${has(value)} or (mailroom_jsonb_timestamptz(${v()}) >= ${p(date.start.toISOString())}::timestamptz and mailroom_jsonb_timestamptz(${v()}) < ${p(date.end.toISOString())}::timestamptz))`;
        }
        if (NUMERIC_TEXT.test(value) && Number.isFinite(Number(value))) {
          return `(${has(value)} or (jsonb_typeof(${v()}) = 'number' and (${v()})::numeric = ${p(value.trim())}::numeric))`;
        }
        if (value === 'true' || value === 'false') return `(${has(value)} or ${has(value === 'true')})`;
        return has(value);
      }
      // Objects and arrays: the stored value is exactly this JSON.
      return `(${v()} = ${p(JSON.stringify(value))}::jsonb)`;
    };

    const contains = (): string => {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      // Parameters are bound in the order the template evaluates them: left to right.
      return `(case jsonb_typeof(${v()}) when 'array' then ${v()} @> jsonb_build_array(${p(JSON.stringify(value))}::jsonb) when 'string' then strpos(lower(${v()} #>> '{}'), lower(${p(text)})) > 0 else false end)`;
    };

    switch (op) {
      case 'equals':
        return equals();
      case 'notEquals':
        return value === null ? exists() : not(equals());
      case 'contains':
        return contains();
      case 'notContains':
        return not(contains());
      case 'exists':
        return exists();
      case 'notExists':
        return not(exists());
      case 'within':
      case 'olderThan':
        return `coalesce(${timeComparison(() => `mailroom_jsonb_timestamptz(${v()})`, op, f)}, false)`;
      case 'greaterThan':
      case 'lessThan':
      case 'greaterThanOrEqual':
      case 'lessThanOrEqual': {
        if (typeof value === 'number') {
          const sign = { greaterThan: '>', lessThan: '<', greaterThanOrEqual: '>=', lessThanOrEqual: '<=' }[op];
          return `coalesce(mailroom_jsonb_numeric(${v()}) ${sign} ${p(value)}, false)`;
        }
        if (parseDateValue(value)) return `coalesce(${timeComparison(() => `mailroom_jsonb_timestamptz(${v()})`, op, f)}, false)`;
        const sign = { greaterThan: '>', lessThan: '<', greaterThanOrEqual: '>=', lessThanOrEqual: '<=' }[op];
        return `(jsonb_typeof(${v()}) = 'string' and (${v()} #>> '{}') collate "C" ${sign} ${p(String(value))})`;
      }
      default:
        throw new Error(`compileCondition: ${op} on data`);
    }
  }

  function activityFilter(named: Extract<FieldRef, { kind: 'event' | 'emailActivity' }>, op: Operator, f: ConditionFilter): string {
    // An `email.sent` event is written exactly when its email's sent_at is set, and the events'
    // condition indexes leave that name out (Migration20261203000000): the email says it.
    const ref: typeof named = named.kind === 'event' && named.name === 'email.sent' ? { kind: 'emailActivity', activity: 'sent' } : named;
    // `when()` binds its parameter, so it is called where its text goes (parameters bind in order).
    const occurred = (age?: 'within' | 'olderThan') => {
      if (ref.kind === 'event') {
        const when = () => (age ? ` and e.created_at ${age === 'within' ? '>=' : '<'} ${interval(f)}` : '');
        return strategy === 'row'
          ? `exists (select 1 from events e where e.contact_id = c.id and e.name = ${p(ref.name)}${when()})`
          : `(c.id in (select e.contact_id from events e where e.project_id = ${p(options.projectId)} and e.name = ${p(ref.name)}${when()} and e.contact_id is not null))`;
      }
      const column = `m.${EMAIL_COLUMNS[ref.activity]}`;
      const when = () => (age ? ` and ${column} ${age === 'within' ? '>=' : '<'} ${interval(f)}` : '');
      return strategy === 'row'
        ? `exists (select 1 from emails m where m.contact_id = c.id and ${column} is not null${when()})`
        : `(c.id in (select m.contact_id from emails m where m.project_id = ${p(options.projectId)} and ${column} is not null${when()} and m.contact_id is not null))`;
    };
    switch (op) {
      case 'triggered':
        return occurred();
      case 'notTriggered':
        return not(occurred());
      case 'triggeredWithin':
        return occurred('within');
      case 'notTriggeredWithin':
        return not(occurred('within'));
      case 'triggeredOlderThan':
        return occurred('olderThan');
      default:
        throw new Error(`compileCondition: ${op} on ${ref.kind}`);
    }
  }

  function membership(segmentId: string, inlining: string[]): string {
    if (!options.segments) throw new UnresolvedSegmentReference(segmentId);
    const segment = options.segments.get(segmentId);
    if (!segment) return 'false';
    if (segment.type === 'STATIC' || segment.trackMembership || !segment.condition) {
      return strategy === 'row'
        ? `exists (select 1 from segment_members sm where sm.segment_id = ${p(segment.id)} and sm.contact_id = c.id)`
        : `(c.id in (select sm.contact_id from segment_members sm where sm.segment_id = ${p(segment.id)}))`;
    }
    // A cycle cannot be saved (validateConditionTree); should one appear anyway, it matches nobody.
    if (inlining.includes(segment.id)) return 'false';
    return `coalesce(${tree_(segment.condition, [...inlining, segment.id])}, false)`;
  }

  function segmentFilter(segmentId: string, op: Operator, inlining: string[]): string {
    return op === 'notMemberOfSegment' ? not(membership(segmentId, inlining)) : membership(segmentId, inlining);
  }

  const sql = `coalesce(${tree_(tree, [])}, false)`;
  return { sql, params };
}
