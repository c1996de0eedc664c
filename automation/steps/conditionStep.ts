import type { EntityManager } from '@mikro-orm/postgresql';
import { compileCondition, contactMatches, type ConditionFilter, type ConditionTree } from '../../db/conditions';
import { conditionTreeIssues } from '../../db/conditions/conditionTree';
import { StepConfigError } from './stepConfig';

const TRIGGER_OPERATORS = new Set(['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin']);

/**
 * Where a CONDITION's field points (contract section 12: `contact.*`, `data.*`, `event.*`):
 * - `contact.email`, `contact.subscribed`, `contact.createdAt`, `contact.updatedAt`, `contact.data.<path>`
 *   and `data.<path>`: the contact as it is now;
 * - `event.<name>` with a trigger operator (`triggered`, `triggeredWithin` …): the contact's event history;
 * - `event.<path>` with any other operator: the execution's context, i.e. the data of the event
 *   that started it, merged with the data of events it waited for;
 * - any other field the segment compiler knows (`email.opened`, `segment.<id>` …) as it is there.
 */
export function conditionTarget(config: Record<string, unknown>): { on: 'contact' | 'context'; filter: ConditionFilter } {
  const field = config.field;
  const operator = config.operator;
  if (typeof field !== 'string' || !field) throw new StepConfigError('CONDITION needs a field');
  if (typeof operator !== 'string' || !operator) throw new StepConfigError('CONDITION needs an operator');
  const rest = { operator, ...(config.value !== undefined ? { value: config.value } : {}), ...(config.unit !== undefined ? { unit: config.unit as string } : {}) };
  if (field.startsWith('contact.')) {
    const name = field.slice('contact.'.length);
    return { on: 'contact', filter: { field: name, ...rest } };
  }
  if (field.startsWith('event.') && !TRIGGER_OPERATORS.has(operator)) {
    return { on: 'context', filter: { field: `data.${field.slice('event.'.length)}`, ...rest } };
  }
  return { on: 'contact', filter: { field, ...rest } };
}

/**
 * Whether the CONDITION holds now: through the one condition compiler, on the contact's fresh
 * row, or (for context fields) on the context as if it were a contact's data, so every operator
 * means exactly what it means in segments.
 */
export async function evaluateCondition(
  em: EntityManager,
  input: { projectId: string; contactId: string; context: Record<string, unknown>; config: Record<string, unknown> },
): Promise<boolean> {
  const target = conditionTarget(input.config);
  const tree: ConditionTree = { logic: 'AND', groups: [{ filters: [target.filter] }] };
  const issues = conditionTreeIssues(tree);
  if (issues.length) throw new StepConfigError(`CONDITION cannot be evaluated: ${issues.map((i) => i.message).join('; ')}`);
  if (target.on === 'contact') return contactMatches(em, input.projectId, input.contactId, tree);
  const compiled = compileCondition(tree, { projectId: input.projectId, strategy: 'row' });
  const rows = await em.execute(`select ${compiled.sql} as matches from (select ?::jsonb as data) c`, [...compiled.params, JSON.stringify(input.context)]);
  return rows[0]?.matches === true;
}
