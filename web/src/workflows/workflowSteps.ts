import type { components } from '../../../client/mailroomClient';
import { amountText, comparisonPhrase, valueText } from '../segments/conditionText';

/**
 * A workflow's graph as a readable, numbered list, until the graph editor comes: the steps in the
 * order an execution meets them (depth first from the TRIGGER step: a CONDITION's "yes" branch
 * before its "no", a WAIT_FOR_EVENT's event before its timeout), each with what it does in words and
 * where it goes next; steps no transition reaches come last, marked. Pure, so it is unit-tested
 * (test/fast/dashboard/workflowSteps.test.ts).
 */

type Workflow = components['schemas']['Workflow'];
export type WorkflowStep = Workflow['steps'][number];
export type WorkflowTransition = Workflow['transitions'][number];

export interface StepLink {
  /** "If yes", "If no", "When the event arrives", "On timeout", or null for the one plain next step. */
  label: string | null;
  toNumber: number;
  toName: string;
}

export interface StepEntry {
  /** 1-based, in the listed order. */
  number: number;
  id: string;
  name: string;
  type: WorkflowStep['type'];
  /** The kind in words ("Send email"). */
  kind: string;
  /** What the step does, in words. */
  summary: string;
  next: StepLink[];
  /** False for a step no path from the TRIGGER reaches (it never runs). */
  reachable: boolean;
}

export const STEP_KINDS: Record<WorkflowStep['type'], string> = {
  TRIGGER: 'Trigger',
  SEND_EMAIL: 'Send email',
  DELAY: 'Delay',
  WAIT_FOR_EVENT: 'Wait for event',
  CONDITION: 'Condition',
  WEBHOOK: 'Webhook',
  UPDATE_CONTACT: 'Update contact',
  EXIT: 'Exit',
};

/** The order a step's outgoing transitions are read in. */
function linkRank(t: WorkflowTransition): number {
  if (t.branch === 'yes' || t.waitOutcome === 'EVENT') return 0;
  if (t.branch === 'no' || t.waitOutcome === 'TIMEOUT') return 1;
  return 2;
}

function linkLabel(t: WorkflowTransition): string | null {
  if (t.branch === 'yes') return 'If yes';
  if (t.branch === 'no') return 'If no';
  if (t.waitOutcome === 'EVENT') return 'When the event arrives';
  if (t.waitOutcome === 'TIMEOUT') return 'On timeout';
  return null;
}

export function workflowStepList(
  workflow: { triggerConfig: { eventName: string }; steps: WorkflowStep[]; transitions: WorkflowTransition[] },
  templateNames: ReadonlyMap<string, string> = new Map(),
): StepEntry[] {
  const byId = new Map(workflow.steps.map((step) => [step.id, step]));
  const outgoing = new Map<string, WorkflowTransition[]>();
  for (const t of workflow.transitions) {
    if (!byId.has(t.fromStepId) || !byId.has(t.toStepId)) continue;
    outgoing.set(t.fromStepId, [...(outgoing.get(t.fromStepId) ?? []), t]);
  }
  for (const list of outgoing.values()) list.sort((a, b) => linkRank(a) - linkRank(b));

  // Depth first from the TRIGGER; an explicit stack keeps a long chain from deepening the call stack.
  const order: string[] = [];
  const seen = new Set<string>();
  const trigger = workflow.steps.find((step) => step.type === 'TRIGGER');
  const stack = trigger ? [trigger.id] : [];
  while (stack.length) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    order.push(id);
    const next = (outgoing.get(id) ?? []).map((t) => t.toStepId).filter((to) => !seen.has(to));
    for (let i = next.length - 1; i >= 0; i--) stack.push(next[i]);
  }
  const reachable = new Set(order);
  for (const step of workflow.steps) if (!reachable.has(step.id)) order.push(step.id);

  const numberOf = new Map(order.map((id, index) => [id, index + 1]));
  return order.map((id, index) => {
    const step = byId.get(id)!;
    return {
      number: index + 1,
      id,
      name: step.name,
      type: step.type,
      kind: STEP_KINDS[step.type],
      summary: stepSummary(step, workflow.triggerConfig.eventName, templateNames),
      next: (outgoing.get(id) ?? []).map((t) => ({ label: linkLabel(t), toNumber: numberOf.get(t.toStepId)!, toName: byId.get(t.toStepId)!.name })),
      reachable: reachable.has(id),
    };
  });
}

const SECONDS = [
  { unit: 'days', seconds: 86_400 },
  { unit: 'hours', seconds: 3600 },
  { unit: 'minutes', seconds: 60 },
];

/** A timeout in seconds in the largest whole unit: 86400 → "1 day", 5400 → "90 minutes", 30 → "30 seconds". */
export function durationText(seconds: number): string {
  for (const { unit, seconds: size } of SECONDS) {
    if (seconds >= size && seconds % size === 0) return amountText(seconds / size, unit);
  }
  return amountText(seconds, 'seconds');
}

/** What one step does, in words. */
export function stepSummary(step: WorkflowStep, eventName: string, templateNames: ReadonlyMap<string, string> = new Map()): string {
  const config = step.config as Record<string, unknown>;
  const text = (key: string) => {
    const value = config[key];
    return typeof value === 'string' ? value : '';
  };
  switch (step.type) {
    case 'TRIGGER':
      return `Starts when the event "${eventName}" is tracked for a contact`;
    case 'SEND_EMAIL': {
      const templateId = step.templateId ?? text('templateId');
      const name = templateNames.get(templateId);
      const recipient = config.recipient as { type?: string; customEmail?: string } | undefined;
      const to = recipient?.type === 'CUSTOM' && recipient.customEmail ? recipient.customEmail : 'the contact';
      return `Sends ${name ? `the template "${name}"` : `template ${templateId}`} to ${to}`;
    }
    case 'DELAY':
      return `Waits ${amountText(config.amount, config.unit)}`;
    case 'WAIT_FOR_EVENT': {
      const timeout = typeof config.timeout === 'number' ? ` (at most ${durationText(config.timeout)})` : '';
      return `Waits for the event "${text('eventName')}"${timeout}`;
    }
    case 'CONDITION':
      return `Checks whether ${text('field')} ${comparisonPhrase(text('operator'), config.value, config.unit)}`;
    case 'WEBHOOK':
      return `Calls ${text('method') || 'POST'} ${text('url')}`;
    case 'UPDATE_CONTACT': {
      const parts: string[] = [];
      const updates = (config.updates ?? {}) as Record<string, unknown>;
      const entries = Object.entries(updates);
      if (entries.length)
        parts.push(`sets ${entries.map(([key, value]) => (value === null ? `${key} (removed)` : `${key} to ${valueText(value)}`)).join(', ')}`);
      if (config.subscriptionAction === 'subscribe') parts.push('subscribes the contact');
      if (config.subscriptionAction === 'unsubscribe') parts.push('unsubscribes the contact');
      return parts.length ? `Updates the contact: ${parts.join('; ')}` : 'Updates nothing';
    }
    case 'EXIT':
      return text('reason') ? `Ends the execution: ${text('reason')}` : 'Ends the execution';
  }
}
