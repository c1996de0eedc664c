import { durationText, workflowStepList, type WorkflowStep, type WorkflowTransition } from '../../../web/src/workflows/workflowSteps';

// The dashboard's reading of a workflow's graph (web/src/workflows/workflowSteps.ts): a numbered
// list in the order an execution meets the steps, until the graph editor comes.

let n = 0;
const at = '2026-01-01T00:00:00.000Z';
function step(type: WorkflowStep['type'], name: string, config: Record<string, unknown> = {}, templateId: string | null = null): WorkflowStep {
  return { id: `s${++n}`, type, name, config, templateId, position: { x: 0, y: 0 }, createdAt: at, updatedAt: at } as WorkflowStep;
}
function edge(from: WorkflowStep, to: WorkflowStep, labels: Partial<Pick<WorkflowTransition, 'branch' | 'waitOutcome'>> = {}): WorkflowTransition {
  return { id: `t${++n}`, fromStepId: from.id, toStepId: to.id, branch: labels.branch ?? null, waitOutcome: labels.waitOutcome ?? null, createdAt: at };
}

test('lists the steps depth first from the trigger, branches in order, each with its summary and next steps', () => {
  const trigger = step('TRIGGER', 'Signed up');
  const mail = step('SEND_EMAIL', 'Welcome', { templateId: 'tpl-1' }, 'tpl-1');
  const wait = step('WAIT_FOR_EVENT', 'Wait for purchase', { eventName: 'purchase', timeout: 86_400 });
  const check = step('CONDITION', 'Pro?', { field: 'contact.data.plan', operator: 'equals', value: 'pro' });
  const hook = step('WEBHOOK', 'Tell the CRM', { url: 'https://crm.example.com/hook', method: 'POST' });
  const update = step('UPDATE_CONTACT', 'Mark', { updates: { stage: 'lead', old: null }, subscriptionAction: 'unsubscribe' });
  const pause = step('DELAY', 'Pause', { amount: 1, unit: 'hours' });
  const exit = step('EXIT', 'Done', { reason: 'converted' });
  const orphan = step('EXIT', 'Orphan');
  // Transitions given in an order unlike the reading order: the list must not depend on it.
  const transitions = [
    edge(check, pause, { branch: 'no' }),
    edge(wait, update, { waitOutcome: 'TIMEOUT' }),
    edge(trigger, mail),
    edge(check, hook, { branch: 'yes' }),
    edge(mail, wait),
    edge(wait, check, { waitOutcome: 'EVENT' }),
    edge(hook, exit),
    edge(pause, exit),
  ];
  const list = workflowStepList(
    { triggerConfig: { eventName: 'signed_up' }, steps: [orphan, exit, pause, update, hook, check, wait, mail, trigger], transitions },
    new Map([['tpl-1', 'Welcome email']]),
  );
  expect(list.map((e) => `${e.number}. ${e.name}`)).toEqual([
    '1. Signed up',
    '2. Welcome',
    '3. Wait for purchase',
    '4. Pro?',
    '5. Tell the CRM',
    '6. Done',
    '7. Pause',
    '8. Mark',
    '9. Orphan',
  ]);
  expect(list.map((e) => e.summary)).toEqual([
    'Starts when the event "signed_up" is tracked for a contact',
    'Sends the template "Welcome email" to the contact',
    'Waits for the event "purchase" (at most 1 day)',
    'Checks whether contact.data.plan is "pro"',
    'Calls POST https://crm.example.com/hook',
    'Ends the execution: converted',
    'Waits 1 hour',
    'Updates the contact: sets stage to "lead", old (removed); unsubscribes the contact',
    'Ends the execution',
  ]);
  expect(list[2].next).toEqual([
    { label: 'When the event arrives', toNumber: 4, toName: 'Pro?' },
    { label: 'On timeout', toNumber: 8, toName: 'Mark' },
  ]);
  expect(list[3].next.map((l) => l.label)).toEqual(['If yes', 'If no']);
  expect(list[0].next).toEqual([{ label: null, toNumber: 2, toName: 'Welcome' }]);
  expect(list.filter((e) => !e.reachable).map((e) => e.name)).toEqual(['Orphan']);
  expect(list[1].kind).toBe('Send email');
});

test('a cycle is listed once; a workflow without steps beyond its trigger is one entry', () => {
  const trigger = step('TRIGGER', 'Start');
  const a = step('DELAY', 'A', { amount: 2, unit: 'days' });
  const b = step('SEND_EMAIL', 'B', { templateId: 'x', recipient: { type: 'CUSTOM', customEmail: 'ops@example.com' } }, 'x');
  const list = workflowStepList({ triggerConfig: { eventName: 'e' }, steps: [trigger, a, b], transitions: [edge(trigger, a), edge(a, b), edge(b, a)] });
  expect(list.map((e) => e.name)).toEqual(['Start', 'A', 'B']);
  expect(list[2].summary).toBe('Sends template x to ops@example.com');
  expect(list[2].next).toEqual([{ label: null, toNumber: 2, toName: 'A' }]);
  expect(workflowStepList({ triggerConfig: { eventName: 'e' }, steps: [trigger], transitions: [] })).toHaveLength(1);
});

test('durations in the largest whole unit', () => {
  expect(durationText(86_400)).toBe('1 day');
  expect(durationText(7200)).toBe('2 hours');
  expect(durationText(5400)).toBe('90 minutes');
  expect(durationText(30)).toBe('30 seconds');
});
