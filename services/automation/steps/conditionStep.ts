import type { EntityManager } from '@mikro-orm/postgresql';
import { contactMatches, dataMatches, type ConditionFilter, type ConditionTree } from '../../../db/conditions';
import { conditionTreeIssues } from '../../../db/conditions/conditionTree';
import { StepConfigError } from '../stepConfigs';
import { CONDITION_STEP_FIELD_HELP, parseConditionStepField } from '../conditionStepField';

/**
 * Where a CONDITION's field points, as services/automation/conditionStepField.ts defines it: the contact
 * (its own fields and data, read fresh) or the execution's context (`event.<path>`: the data of the
 * event that started it, merged with the data of events it waited for).
 */
export function conditionTarget(config: Record<string, unknown>): { on: 'contact' | 'context'; filter: ConditionFilter } {
  const field = config.field;
  const operator = config.operator;
  if (typeof field !== 'string' || !field) throw new StepConfigError('CONDITION needs a field');
  if (typeof operator !== 'string' || !operator) throw new StepConfigError('CONDITION needs an operator');
  const parsed = parseConditionStepField(field);
  if (!parsed) throw new StepConfigError(CONDITION_STEP_FIELD_HELP);
  const filter: ConditionFilter = {
    field: parsed.treeField,
    operator,
    ...(config.value !== undefined ? { value: config.value } : {}),
    ...(config.unit !== undefined ? { unit: config.unit as string } : {}),
  };
  return { on: parsed.source === 'event' ? 'context' : 'contact', filter };
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
  return dataMatches(em, input.projectId, tree, input.context);
}
