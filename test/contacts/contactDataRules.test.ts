import { dataProblem } from '../../services/contacts/contactDataRules';
import { MAX_JSON_DEPTH } from '../../lib/untrustedJson';

// The data rules guard every write path, not only HTTP (whose parser refuses these first):
// imports, workflow steps and sends hand them values built in code.
describe('contact data rules on values from any write path', () => {
  function nested(levels: number): Record<string, unknown> {
    let value: Record<string, unknown> = { leaf: true };
    for (let i = 1; i < levels; i++) value = { a: value };
    return value;
  }

  it('refuses data nested deeper than the limit without overflowing the stack, however deep', () => {
    expect(dataProblem(nested(MAX_JSON_DEPTH))).toBeNull();
    for (const levels of [MAX_JSON_DEPTH + 1, 5_000, 200_000]) {
      expect(dataProblem(nested(levels))).toMatchObject({ code: 'too_big', message: expect.stringContaining(`${MAX_JSON_DEPTH} levels`) });
    }
  });

  it('stops at the depth bound on a value that refers to itself', () => {
    const cyclic: Record<string, unknown> = { name: 'loop' };
    cyclic.self = cyclic;
    expect(dataProblem(cyclic)).toMatchObject({ code: 'too_big' });
  });

  it('names the field holding text PostgreSQL cannot store', () => {
    expect(dataProblem({ ok: 'fine', address: { lines: ['one', 'tw\u0000o'] } })).toMatchObject({ field: 'data.address.lines.1', code: 'invalid_string' });
    expect(dataProblem({ ['k\u0000']: 1 })).toMatchObject({ field: 'data.k\u0000', code: 'invalid_string' });
    expect(dataProblem({ name: 'x\udc00' })).toMatchObject({ field: 'data.name', code: 'invalid_string' });
    expect(dataProblem({ name: '💌' })).toBeNull();
  });
});
