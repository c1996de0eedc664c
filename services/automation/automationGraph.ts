/**
 * The step graph of an automation workflow (contract section 12), as pure functions: which
 * problems stop a graph from running, and which step follows another. No database here: the
 * repository loads the rows, the API refuses to enable (or, when enabled, to break) a graph with
 * problems, and the execution workflow walks it with nextStepId.
 */

export {
  STEP_TYPES,
  ADDABLE_STEP_TYPES,
  BRANCHES,
  WAIT_OUTCOMES,
  type StepType,
  type AddableStepType,
  type Branch,
  type WaitOutcome,
  type StepOutcome,
  type GraphStep,
  type GraphTransition,
} from '../../db/automations/automationSteps';
import type { GraphStep, GraphTransition, StepOutcome, StepType } from '../../db/automations/automationSteps';

/** Why a graph cannot run, as GET /workflows/:id's `problems` name it. */
export const GRAPH_PROBLEM_KINDS = [
  'missing_trigger',
  'empty_workflow',
  'condition_branch_missing',
  'wait_timeout_edge_missing',
  'wait_timeout_edge_without_timeout',
  'label_mismatch',
  'too_many_exits',
  'exit_has_next_step',
  'edge_into_trigger',
  'unreachable_step',
  'cycle_without_pause',
  'template_missing',
] as const;
export type GraphProblemKind = (typeof GRAPH_PROBLEM_KINDS)[number];

export interface GraphProblem {
  kind: GraphProblemKind;
  message: string;
  stepId?: string;
  transitionId?: string;
  /** cycle_without_pause: the steps of the cycle. */
  stepIds?: string[];
}

/** The label a transition out of a step of this kind must carry: branch, waitOutcome, or neither. */
export function edgeLabelKind(type: StepType): 'branch' | 'waitOutcome' | 'none' {
  if (type === 'CONDITION') return 'branch';
  if (type === 'WAIT_FOR_EVENT') return 'waitOutcome';
  return 'none';
}

/** Whether a transition's labels fit its source step's kind. */
export function labelsFit(type: StepType, t: Pick<GraphTransition, 'branch' | 'waitOutcome'>): boolean {
  switch (edgeLabelKind(type)) {
    case 'branch':
      return t.branch !== null && t.waitOutcome === null;
    case 'waitOutcome':
      return t.waitOutcome !== null && t.branch === null;
    default:
      return t.branch === null && t.waitOutcome === null;
  }
}

/** Steps that make a run pause durably: a cycle through one of them cannot spin. */
const PAUSING: ReadonlySet<StepType> = new Set(['DELAY', 'WAIT_FOR_EVENT']);

const hasTimeout = (step: GraphStep) => typeof step.config.timeout === 'number' && step.config.timeout > 0;

/**
 * Every problem that stops the graph from running, in a stable order (by step, then by kind).
 * An empty list means the workflow may be enabled.
 */
export function graphProblems(steps: readonly GraphStep[], transitions: readonly GraphTransition[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const byId = new Map(steps.map((s) => [s.id, s]));
  const outgoing = new Map<string, GraphTransition[]>();
  for (const t of transitions) {
    if (!byId.has(t.fromStepId) || !byId.has(t.toStepId)) continue;
    outgoing.set(t.fromStepId, [...(outgoing.get(t.fromStepId) ?? []), t]);
  }
  const name = (s: GraphStep) => `${s.type} step ${s.id}`;

  const trigger = steps.find((s) => s.type === 'TRIGGER');
  if (!trigger) {
    problems.push({ kind: 'missing_trigger', message: 'The workflow has no TRIGGER step' });
  } else if (!(outgoing.get(trigger.id) ?? []).length) {
    problems.push({
      kind: 'empty_workflow',
      stepId: trigger.id,
      message: 'The TRIGGER step leads nowhere: add a step and a transition from the TRIGGER to it',
    });
  }

  for (const step of steps) {
    const out = outgoing.get(step.id) ?? [];
    for (const t of out) {
      if (!labelsFit(step.type, t)) {
        const expected = edgeLabelKind(step.type);
        problems.push({
          kind: 'label_mismatch',
          stepId: step.id,
          transitionId: t.id,
          message:
            expected === 'branch'
              ? `Transition ${t.id} out of ${name(step)} needs a branch (yes or no) and no waitOutcome`
              : expected === 'waitOutcome'
                ? `Transition ${t.id} out of ${name(step)} needs a waitOutcome (EVENT or TIMEOUT) and no branch`
                : `Transition ${t.id} out of ${name(step)} must carry neither branch nor waitOutcome`,
        });
      }
      if (byId.get(t.toStepId)?.type === 'TRIGGER') {
        problems.push({ kind: 'edge_into_trigger', stepId: step.id, transitionId: t.id, message: `Transition ${t.id} leads back into the TRIGGER step` });
      }
    }
    if (step.type === 'EXIT' && out.length) {
      problems.push({ kind: 'exit_has_next_step', stepId: step.id, message: `${name(step)} ends the run, yet has a transition out of it` });
    }
    if (step.type === 'CONDITION') {
      for (const branch of ['yes', 'no'] as const) {
        if (!out.some((t) => t.branch === branch)) {
          problems.push({ kind: 'condition_branch_missing', stepId: step.id, message: `${name(step)} has no "${branch}" transition` });
        }
      }
    }
    if (step.type === 'WAIT_FOR_EVENT') {
      const timeoutEdge = out.some((t) => t.waitOutcome === 'TIMEOUT');
      if (hasTimeout(step) && !timeoutEdge) {
        problems.push({ kind: 'wait_timeout_edge_missing', stepId: step.id, message: `${name(step)} has a timeout but no TIMEOUT transition` });
      } else if (!hasTimeout(step) && timeoutEdge) {
        problems.push({
          kind: 'wait_timeout_edge_without_timeout',
          stepId: step.id,
          message: `${name(step)} has a TIMEOUT transition but no timeout in its config`,
        });
      }
    }
    if (edgeLabelKind(step.type) === 'none' && out.length > 1) {
      problems.push({
        kind: 'too_many_exits',
        stepId: step.id,
        message: `${name(step)} has ${out.length} transitions out of it; a step of this kind has one next step`,
      });
    }
    if (step.type === 'SEND_EMAIL' && step.templateAvailable === false) {
      problems.push({ kind: 'template_missing', stepId: step.id, message: `${name(step)} sends a template that no longer exists in this project` });
    }
  }

  if (trigger) {
    const reached = reachableFrom(trigger.id, outgoing);
    for (const step of steps) {
      if (!reached.has(step.id)) {
        problems.push({ kind: 'unreachable_step', stepId: step.id, message: `${name(step)} cannot be reached from the TRIGGER step` });
      }
    }
  }

  for (const cycle of cyclesWithoutPause(steps, outgoing)) {
    problems.push({
      kind: 'cycle_without_pause',
      stepId: cycle[0],
      stepIds: cycle,
      message: `Steps ${cycle.join(', ')} form a loop with no DELAY or WAIT_FOR_EVENT in it; a run would never stop`,
    });
  }
  return problems;
}

/**
 * The problems that matter to the runs of an enabled workflow: those at steps a run can reach.
 * Steps not (yet) connected never run, so a live workflow may carry them while it is being edited.
 */
export function runProblems(steps: readonly GraphStep[], transitions: readonly GraphTransition[]): GraphProblem[] {
  const all = graphProblems(steps, transitions);
  const unreachable = new Set(all.filter((p) => p.kind === 'unreachable_step').map((p) => p.stepId));
  return all.filter((p) => p.kind !== 'unreachable_step' && !(p.stepId && unreachable.has(p.stepId) && !p.stepIds?.some((id) => !unreachable.has(id))));
}

function reachableFrom(start: string, outgoing: ReadonlyMap<string, GraphTransition[]>): Set<string> {
  const seen = new Set([start]);
  const queue = [start];
  while (queue.length) {
    for (const t of outgoing.get(queue.shift()!) ?? []) {
      if (!seen.has(t.toStepId)) {
        seen.add(t.toStepId);
        queue.push(t.toStepId);
      }
    }
  }
  return seen;
}

/**
 * The loops a run could go round without ever pausing: the strongly connected components (of
 * more than one step, self-loops being refused by the schema) of the graph without its DELAY and
 * WAIT_FOR_EVENT steps. A loop through a pausing step is allowed: each round waits.
 */
function cyclesWithoutPause(steps: readonly GraphStep[], outgoing: ReadonlyMap<string, GraphTransition[]>): string[][] {
  const nodes = steps.filter((s) => !PAUSING.has(s.type)).map((s) => s.id);
  const inGraph = new Set(nodes);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;

  // Iterative Tarjan: a long chain of steps must not exhaust the call stack.
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: root, next: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const frame = work[work.length - 1];
      const edges = (outgoing.get(frame.node) ?? []).filter((t) => inGraph.has(t.toStepId));
      if (frame.next < edges.length) {
        const to = edges[frame.next++].toStepId;
        if (!index.has(to)) {
          index.set(to, counter);
          low.set(to, counter++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) components.push(component.sort());
      }
    }
  }
  return components.sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * The step a run goes to after `fromStepId`, or null when the run ends there. `outcome` is what the
 * step decided: a CONDITION's branch (`yes`/`no`), a WAIT_FOR_EVENT's `EVENT`/`TIMEOUT`; omitted for
 * every other kind, whose one transition carries no label. A WAIT_FOR_EVENT whose event arrived
 * and that has no EVENT transition ends the run, as does any step without a way out.
 */
export function nextStepId(transitions: readonly GraphTransition[], fromStepId: string, outcome?: StepOutcome | null): string | null {
  const wantBranch = outcome === 'yes' || outcome === 'no' ? outcome : null;
  const wantWait = outcome === 'EVENT' || outcome === 'TIMEOUT' ? outcome : null;
  const match = transitions.find((t) => t.fromStepId === fromStepId && t.branch === wantBranch && t.waitOutcome === wantWait);
  return match ? match.toStepId : null;
}
