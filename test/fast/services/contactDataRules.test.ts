import { MAX_DATA_BYTES, MAX_DATA_KEYS, applyDataChanges, dataProblem, requestVariables, splitDataChanges } from '../../../services/contacts/contactDataRules';
import { templateVariables } from '../../../services/sending/templateVariables';
import { emailLinks } from '../../../mail/links/signedLinks';

/**
 * The contact data rules (services/contacts/contactDataRules.ts) and the template variables built
 * on them. Nesting depth and unstorable text: test/contacts/contactDataRules.test.ts.
 */
describe('splitDataChanges', () => {
  it('saves primitives, objects and arrays; null deletes; "" and undefined change nothing; reserved keys are dropped', () => {
    expect(
      splitDataChanges({
        plan: 'pro',
        seats: 3,
        active: false,
        address: { city: 'Lyon' },
        tags: ['a'],
        gone: null,
        blank: '',
        missing: undefined,
        email: 'other@example.org',
        id: 'x',
        unsubscribeUrl: 'https://evil.example',
      }),
    ).toEqual({ set: { plan: 'pro', seats: 3, active: false, address: { city: 'Lyon' }, tags: ['a'] }, unset: ['gone'], oneShot: {} });
  });

  it('{ value, persistent: false } is for this request only; { value, persistent: true } is a value like any other', () => {
    expect(
      splitDataChanges({
        code: { value: '1234', persistent: false },
        name: { value: 'Ada', persistent: true },
        cleared: { value: null, persistent: true },
        ignored: { value: '', persistent: true },
        // Not the wrapper (another key beside them): an object saved as it is.
        shaped: { value: 1, persistent: true, other: 2 },
      }),
    ).toEqual({ set: { name: 'Ada', shaped: { value: 1, persistent: true, other: 2 } }, unset: ['cleared'], oneShot: { code: '1234' } });
  });

  it('nothing to change for no data', () => {
    expect(splitDataChanges(undefined)).toEqual({ set: {}, unset: [], oneShot: {} });
    expect(splitDataChanges(null)).toEqual({ set: {}, unset: [], oneShot: {} });
  });

  it('stores a key named __proto__ as data, never as the prototype', () => {
    const changes = splitDataChanges(JSON.parse('{"__proto__": {"admin": true}}'));
    expect(Object.getPrototypeOf(changes.set)).toBe(Object.prototype);
    expect(Object.keys(changes.set)).toEqual(['__proto__']);
    expect((changes.set as { admin?: unknown }).admin).toBeUndefined();
  });
});

it('applyDataChanges and requestVariables: stored data, then saved changes, deletions, then one-shot values', () => {
  const changes = splitDataChanges({ plan: 'pro', old: null, code: { value: 'X', persistent: false } });
  const stored = { plan: 'free', old: 1, kept: true };
  expect(applyDataChanges(stored, changes)).toEqual({ plan: 'pro', kept: true });
  expect(requestVariables(stored, changes)).toEqual({ plan: 'pro', kept: true, code: 'X' });
  expect(stored).toEqual({ plan: 'free', old: 1, kept: true });
});

describe('dataProblem', () => {
  it('accepts data within the bounds', () => {
    expect(dataProblem(Object.fromEntries(Array.from({ length: MAX_DATA_KEYS }, (_, i) => [`k${i}`, i])))).toBeNull();
  });

  it('refuses too many keys, an empty or over-long key, and data too large as JSON', () => {
    expect(dataProblem(Object.fromEntries(Array.from({ length: MAX_DATA_KEYS + 1 }, (_, i) => [`k${i}`, i])))).toEqual({
      field: 'data',
      message: 'data may hold at most 100 keys',
      code: 'too_big',
    });
    expect(dataProblem({ '': 1 })).toMatchObject({ field: 'data.', code: 'invalid_string' });
    expect(dataProblem({ ['k'.repeat(101)]: 1 })).toEqual({
      field: `data.${'k'.repeat(40)}`,
      message: 'data keys must be 1-100 characters',
      code: 'invalid_string',
    });
    expect(dataProblem({ big: 'x'.repeat(MAX_DATA_BYTES) })).toEqual({ field: 'data', message: 'data may be at most 64 KB as JSON', code: 'too_big' });
  });
});

describe('templateVariables', () => {
  const contact = { id: 'c1', email: 'ada@example.org', data: { name: 'Ada', plan: 'free', email: 'stored@example.org' } };

  it('every data key at the top and under data, the request over it, and the reserved names winning', () => {
    const variables = templateVariables(contact, { plan: 'pro', code: { value: '42', persistent: false }, id: 'forged', name: '' });
    const data = { name: 'Ada', plan: 'pro', email: 'stored@example.org', code: '42' };
    expect(variables).toEqual({
      ...data,
      data,
      id: 'c1',
      email: 'ada@example.org',
      mailroom_id: 'c1',
      mailroom_email: 'ada@example.org',
      unsubscribeUrl: '',
      subscribeUrl: '',
      manageUrl: '',
    });
  });

  it('the three links when given', () => {
    const links = emailLinks('https://mail.example.org', 'a-secret', { emailId: 'e1', contactId: 'c1' });
    expect(templateVariables(contact, {}, links)).toMatchObject({
      unsubscribeUrl: links.unsubscribeUrl,
      subscribeUrl: links.subscribeUrl,
      manageUrl: links.manageUrl,
    });
  });
});
