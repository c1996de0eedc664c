import type { TestStack } from '../support/testStack';
import { forgetAutomationTriggers } from '../../services/automation/executionTriggers';

export interface StepRow {
  key: string;
  type: 'SEND_EMAIL' | 'DELAY' | 'WAIT_FOR_EVENT' | 'CONDITION' | 'WEBHOOK' | 'UPDATE_CONTACT' | 'EXIT';
  config?: Record<string, unknown>;
  templateId?: string;
}

export interface TransitionRow {
  from: string;
  to: string;
  branch?: 'yes' | 'no';
  waitOutcome?: 'EVENT' | 'TIMEOUT';
}

/**
 * A workflow definition written straight into its tables (the definition API is built beside
 * this one): a TRIGGER step keyed `trigger`, the given steps and transitions. Answers the ids.
 */
export async function insertWorkflow(
  stack: TestStack,
  projectId: string,
  definition: { eventName: string; allowReentry?: boolean; enabled?: boolean; name?: string; steps: StepRow[]; transitions: TransitionRow[] },
): Promise<{ id: string; steps: Record<string, string> }> {
  const em = stack.orm.em.fork();
  const [workflow] = await em.execute(
    `insert into workflows (project_id, name, trigger_event_name, enabled, allow_reentry) values (?, ?, ?, ?, ?) returning id`,
    [projectId, definition.name ?? 'Test workflow', definition.eventName, definition.enabled ?? true, definition.allowReentry ?? false],
  );
  const steps: Record<string, string> = {};
  const all: Array<{ key: string; type: string; config?: Record<string, unknown>; templateId?: string }> = [
    { key: 'trigger', type: 'TRIGGER', config: { eventName: definition.eventName } },
    ...definition.steps,
  ];
  for (const step of all) {
    const [row] = await em.execute(`insert into workflow_steps (workflow_id, type, name, config, template_id) values (?, ?, ?, ?::jsonb, ?) returning id`, [
      workflow.id,
      step.type,
      step.key,
      JSON.stringify(step.config ?? {}),
      step.templateId ?? null,
    ]);
    steps[step.key] = row.id;
  }
  for (const t of definition.transitions) {
    await em.execute(`insert into workflow_transitions (workflow_id, from_step_id, to_step_id, branch, wait_outcome) values (?, ?, ?, ?, ?)`, [
      workflow.id,
      steps[t.from],
      steps[t.to],
      t.branch ?? null,
      t.waitOutcome ?? null,
    ]);
  }
  forgetAutomationTriggers(projectId);
  return { id: workflow.id, steps };
}

/** A straight line of steps after the trigger. */
export function chain(...keys: string[]): TransitionRow[] {
  const all = ['trigger', ...keys];
  return all.slice(1).map((to, i) => ({ from: all[i], to }));
}
