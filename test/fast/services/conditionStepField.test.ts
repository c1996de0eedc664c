import { parseConditionStepField } from '../../../services/automation/conditionStepField';

/** What a CONDITION step's `field` names (services/automation/conditionStepField.ts). */
it("reads the contact's own fields, its data (both spellings) and the execution's event data", () => {
  expect(parseConditionStepField('contact.subscribed')).toEqual({ source: 'contact', treeField: 'subscribed' });
  expect(parseConditionStepField('contact.createdAt')).toEqual({ source: 'contact', treeField: 'createdAt' });
  expect(parseConditionStepField('contact.data.plan.tier')).toEqual({ source: 'contactData', path: ['plan', 'tier'], treeField: 'data.plan.tier' });
  expect(parseConditionStepField('data.plan')).toEqual({ source: 'contactData', path: ['plan'], treeField: 'data.plan' });
  expect(parseConditionStepField('event.amount')).toEqual({ source: 'event', path: ['amount'], treeField: 'data.amount' });
});

it('refuses other namespaces and fields, empty parts and paths too long or too deep', () => {
  for (const field of [
    'plan',
    'contact.password',
    'contact.',
    'contact.data.',
    'data.',
    'event.',
    'data.a..b',
    `data.${'p'.repeat(101)}`,
    `event.${Array(11).fill('a').join('.')}`,
    'contact.data.a..b',
  ]) {
    expect([field, parseConditionStepField(field)]).toEqual([field, null]);
  }
  expect(parseConditionStepField(`data.${'p'.repeat(100)}`)).not.toBeNull();
  expect(parseConditionStepField(`event.${Array(10).fill('a').join('.')}`)).not.toBeNull();
});
