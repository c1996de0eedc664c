import { edgeLabelKind, graphProblems, labelsFit, runProblems, type GraphStep, type GraphTransition } from '../../../services/automation/automationGraph';

/**
 * The rules that stop an automation graph from running (services/automation/automationGraph.ts),
 * one problem kind at a time. nextStepId and the 20,000-step chain are tested in
 * test/workflows/workflowDefinitions.test.ts ('workflowGraph (pure)').
 */
const step = (id: string, type: GraphStep['type'], config: Record<string, unknown> = {}, extra: Partial<GraphStep> = {}): GraphStep => ({
  id,
  type,
  config,
  ...extra,
});
let edges = 0;
const edge = (from: string, to: string, labels: Partial<GraphTransition> = {}): GraphTransition => ({
  id: `t${++edges}`,
  fromStepId: from,
  toStepId: to,
  branch: null,
  waitOutcome: null,
  ...labels,
});
const kinds = (steps: GraphStep[], transitions: GraphTransition[]) => graphProblems(steps, transitions).map((p) => [p.kind, p.stepId]);

/** TRIGGER → CONDITION (yes: WAIT_FOR_EVENT with a timeout, no: EXIT); the wait's EVENT sends and loops back through a DELAY. */
function validGraph() {
  const steps = [
    step('trigger', 'TRIGGER'),
    step('cond', 'CONDITION', { field: 'data.plan', operator: 'exists' }),
    step('wait', 'WAIT_FOR_EVENT', { eventName: 'paid', timeout: 3600 }),
    step('send', 'SEND_EMAIL', { templateId: 'tpl' }, { templateAvailable: true }),
    step('pause', 'DELAY', { amount: 1, unit: 'days' }),
    step('exit', 'EXIT'),
    step('late', 'EXIT'),
  ];
  const transitions = [
    edge('trigger', 'cond'),
    edge('cond', 'wait', { branch: 'yes' }),
    edge('cond', 'exit', { branch: 'no' }),
    edge('wait', 'send', { waitOutcome: 'EVENT' }),
    edge('wait', 'late', { waitOutcome: 'TIMEOUT' }),
    edge('send', 'pause'),
    edge('pause', 'cond'),
  ];
  return { steps, transitions };
}

it('finds nothing wrong with a graph that can run, a loop through a DELAY included', () => {
  const { steps, transitions } = validGraph();
  expect(graphProblems(steps, transitions)).toEqual([]);
  expect(runProblems(steps, transitions)).toEqual([]);
});

it('each kind of step carries the labels of its kind on its transitions', () => {
  expect([edgeLabelKind('CONDITION'), edgeLabelKind('WAIT_FOR_EVENT'), edgeLabelKind('DELAY')]).toEqual(['branch', 'waitOutcome', 'none']);
  expect(labelsFit('CONDITION', { branch: 'yes', waitOutcome: null })).toBe(true);
  expect(labelsFit('CONDITION', { branch: null, waitOutcome: null })).toBe(false);
  expect(labelsFit('WAIT_FOR_EVENT', { branch: null, waitOutcome: 'TIMEOUT' })).toBe(true);
  expect(labelsFit('WAIT_FOR_EVENT', { branch: 'no', waitOutcome: 'TIMEOUT' })).toBe(false);
  expect(labelsFit('WEBHOOK', { branch: null, waitOutcome: null })).toBe(true);
  expect(labelsFit('WEBHOOK', { branch: null, waitOutcome: 'EVENT' })).toBe(false);
});

it('a graph without a TRIGGER, or whose TRIGGER leads nowhere, cannot run', () => {
  expect(kinds([step('a', 'DELAY')], [])).toEqual([['missing_trigger', undefined]]);
  expect(kinds([step('trigger', 'TRIGGER')], [])).toEqual([['empty_workflow', 'trigger']]);
});

it('names each transition whose labels do not fit its step, saying what it needs', () => {
  const steps = [step('trigger', 'TRIGGER'), step('cond', 'CONDITION'), step('wait', 'WAIT_FOR_EVENT'), step('exit', 'EXIT')];
  const transitions = [
    edge('trigger', 'cond', { branch: 'yes' }),
    edge('cond', 'wait', { branch: 'yes' }),
    edge('cond', 'exit', { waitOutcome: 'EVENT' }),
    edge('wait', 'exit', { branch: 'no' }),
  ];
  const mismatches = graphProblems(steps, transitions).filter((p) => p.kind === 'label_mismatch');
  expect(mismatches.map((p) => [p.stepId, p.transitionId])).toEqual([
    ['trigger', transitions[0].id],
    ['cond', transitions[2].id],
    ['wait', transitions[3].id],
  ]);
  expect(mismatches.map((p) => p.message)).toEqual([
    `Transition ${transitions[0].id} out of TRIGGER step trigger must carry neither branch nor waitOutcome`,
    `Transition ${transitions[2].id} out of CONDITION step cond needs a branch (yes or no) and no waitOutcome`,
    `Transition ${transitions[3].id} out of WAIT_FOR_EVENT step wait needs a waitOutcome (EVENT or TIMEOUT) and no branch`,
  ]);
});

it('refuses a way back into the TRIGGER, a way out of an EXIT and a second way out of a one-way step', () => {
  const steps = [step('trigger', 'TRIGGER'), step('hook', 'WEBHOOK'), step('pause', 'DELAY'), step('exit', 'EXIT')];
  const transitions = [edge('trigger', 'hook'), edge('hook', 'pause'), edge('hook', 'exit'), edge('pause', 'trigger'), edge('exit', 'pause')];
  expect(kinds(steps, transitions)).toEqual([
    ['too_many_exits', 'hook'],
    ['edge_into_trigger', 'pause'],
    ['exit_has_next_step', 'exit'],
  ]);
});

it('a CONDITION needs both branches; a WAIT_FOR_EVENT a TIMEOUT transition exactly when it has a timeout', () => {
  const steps = [
    step('trigger', 'TRIGGER'),
    step('cond', 'CONDITION'),
    step('timed', 'WAIT_FOR_EVENT', { eventName: 'a', timeout: 60 }),
    step('untimed', 'WAIT_FOR_EVENT', { eventName: 'b' }),
    step('exit', 'EXIT'),
  ];
  const transitions = [
    edge('trigger', 'cond'),
    edge('cond', 'timed', { branch: 'yes' }),
    edge('timed', 'untimed', { waitOutcome: 'EVENT' }),
    edge('untimed', 'exit', { waitOutcome: 'TIMEOUT' }),
  ];
  expect(kinds(steps, transitions)).toEqual([
    ['condition_branch_missing', 'cond'],
    ['wait_timeout_edge_missing', 'timed'],
    ['wait_timeout_edge_without_timeout', 'untimed'],
  ]);
  expect(graphProblems(steps, transitions)[0].message).toBe('CONDITION step cond has no "no" transition');
});

it('a SEND_EMAIL whose template is gone cannot run; one never told otherwise can', () => {
  const steps = [step('trigger', 'TRIGGER'), step('gone', 'SEND_EMAIL', {}, { templateAvailable: false }), step('unknown', 'SEND_EMAIL')];
  expect(kinds(steps, [edge('trigger', 'gone'), edge('gone', 'unknown')])).toEqual([['template_missing', 'gone']]);
});

it('finds a loop that never pauses, and names its steps; transitions to steps that do not exist are ignored', () => {
  const steps = [step('trigger', 'TRIGGER'), step('b', 'WEBHOOK'), step('a', 'UPDATE_CONTACT'), step('c', 'CONDITION')];
  const transitions = [
    edge('trigger', 'a'),
    edge('a', 'b'),
    edge('b', 'c'),
    edge('c', 'a', { branch: 'yes' }),
    edge('c', 'ghost', { branch: 'no' }),
    edge('ghost', 'trigger'),
  ];
  const problems = graphProblems(steps, transitions);
  expect(problems.map((p) => p.kind)).toEqual(['condition_branch_missing', 'cycle_without_pause']);
  expect(problems[1]).toMatchObject({ stepId: 'a', stepIds: ['a', 'b', 'c'], message: expect.stringContaining('Steps a, b, c form a loop') });
});

it('runProblems keeps what a run can reach: problems of unconnected steps wait until they are connected', () => {
  const steps = [step('trigger', 'TRIGGER'), step('pause', 'DELAY'), step('draft', 'CONDITION'), step('x', 'WEBHOOK'), step('y', 'WEBHOOK')];
  // draft and the x ⇄ y loop are not connected yet: graphProblems says so, runProblems lets the graph run.
  const transitions = [edge('trigger', 'pause'), edge('x', 'y'), edge('y', 'x')];
  expect(kinds(steps, transitions)).toEqual([
    ['condition_branch_missing', 'draft'],
    ['condition_branch_missing', 'draft'],
    ['unreachable_step', 'draft'],
    ['unreachable_step', 'x'],
    ['unreachable_step', 'y'],
    ['cycle_without_pause', 'x'],
  ]);
  expect(runProblems(steps, transitions)).toEqual([]);

  // Once the loop is reached, its problem is the run's.
  const connected = [...transitions, edge('pause', 'x')];
  expect(runProblems(steps, connected).map((p) => p.kind)).toEqual(['cycle_without_pause']);
});
