import { amountText, conditionText, filterText, valueText, type ConditionTree } from '../../../web/src/segments/conditionText';

// The dashboard's reading of a condition tree (web/src/segments/conditionText.ts): a segment's
// condition shown as text until the visual builder comes.

describe('conditionText', () => {
  it('writes one line per group, joined by the tree’s logic; a group’s filters joined by "and"', () => {
    const tree: ConditionTree = {
      logic: 'OR',
      groups: [
        {
          filters: [
            { field: 'email', operator: 'contains', value: '@example.com' },
            { field: 'data.plan', operator: 'equals', value: 'pro' },
          ],
        },
        { filters: [{ field: 'event.signed_up', operator: 'triggeredWithin', value: 7, unit: 'days' }] },
      ],
    };
    expect(conditionText(tree)).toBe('email contains "@example.com" and data.plan is "pro"\nOR event "signed_up" happened in the last 7 days');
  });

  it('puts nested trees in parentheses and names segments by their names', () => {
    const segmentId = '0b7c8f3e-5a1d-4c2b-9e6f-1a2b3c4d5e6f';
    const tree: ConditionTree = {
      logic: 'AND',
      groups: [
        {
          filters: [{ field: 'subscribed', operator: 'equals', value: true }],
          conditions: {
            logic: 'OR',
            groups: [
              { filters: [{ field: `segment.${segmentId}`, operator: 'memberOfSegment' }] },
              {
                filters: [
                  { field: 'email.opened', operator: 'notTriggeredWithin', value: 1, unit: 'months' },
                  { field: 'data.score', operator: 'greaterThanOrEqual', value: 10 },
                ],
              },
            ],
          },
        },
      ],
    };
    expect(conditionText(tree, new Map([[segmentId, 'Trial users']]))).toBe(
      'subscribed is true and (in segment "Trial users" or (an email opened did not happen in the last 1 month and data.score is at least 10))',
    );
    expect(conditionText(tree)).toContain(`in segment ${segmentId}`);
  });

  it('says every operator in words', () => {
    const cases: Array<[Parameters<typeof filterText>[0], string]> = [
      [{ field: 'email', operator: 'notEquals', value: 'a@b.co' }, 'email is not "a@b.co"'],
      [{ field: 'email', operator: 'notContains', value: 'spam' }, 'email does not contain "spam"'],
      [{ field: 'data.age', operator: 'greaterThan', value: 18 }, 'data.age is greater than 18'],
      [{ field: 'data.age', operator: 'lessThan', value: 65 }, 'data.age is less than 65'],
      [{ field: 'data.age', operator: 'lessThanOrEqual', value: 65 }, 'data.age is at most 65'],
      [{ field: 'createdAt', operator: 'greaterThan', value: '2026-01-01' }, 'created is after "2026-01-01"'],
      [{ field: 'updatedAt', operator: 'lessThan', value: '2026-01-01' }, 'updated is before "2026-01-01"'],
      [{ field: 'createdAt', operator: 'within', value: 30, unit: 'days' }, 'created is within the last 30 days'],
      [{ field: 'data.renewal', operator: 'olderThan', value: 2, unit: 'weeks' }, 'data.renewal is more than 2 weeks ago'],
      [{ field: 'data.company', operator: 'exists' }, 'data.company is set'],
      [{ field: 'data.company', operator: 'notExists' }, 'data.company is not set'],
      [{ field: 'data.company', operator: 'equals', value: null }, 'data.company is not set'],
      [{ field: 'event.purchase', operator: 'triggered' }, 'event "purchase" happened'],
      [{ field: 'event.purchase', operator: 'notTriggered' }, 'event "purchase" never happened'],
      [{ field: 'email.clicked', operator: 'triggeredOlderThan', value: 3, unit: 'hours' }, 'an email clicked happened more than 3 hours ago'],
      [{ field: 'segment.abc', operator: 'notMemberOfSegment' }, 'not in segment abc'],
    ];
    for (const [filter, text] of cases) expect(filterText(filter)).toBe(text);
  });

  it('writes values and amounts as a person would', () => {
    expect(valueText('pro')).toBe('"pro"');
    expect(valueText(42)).toBe('42');
    expect(valueText(false)).toBe('false');
    expect(valueText(null)).toBe('nothing');
    expect(valueText(['a', 1])).toBe('"a", 1');
    expect(amountText(1, 'days')).toBe('1 day');
    expect(amountText(5, 'minutes')).toBe('5 minutes');
  });

  it('says when no group has anything to match', () => {
    expect(conditionText({ logic: 'AND', groups: [] })).toBe('No condition (matches no contact)');
  });
});
