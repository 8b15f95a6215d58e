/** merged (src/core/merged.ts): the object spread `{ ...base, ...extra }` built key by key. */
import { describe, expect, it } from 'vitest';
import { merged } from '../../src/core/merged.js';

const spread = (a: object, b: object) => ({ ...a, ...b });

describe('merged', () => {
  it('gives what the spread gives: base keys in order, extra new ones after, extra winning in place', () => {
    const base = { b: 1, a: 2, nested: { x: 1 }, gone: undefined };
    const extra = { a: 'over', c: 3 };
    const m = merged(base, extra);
    expect(JSON.stringify(m)).toBe(JSON.stringify(spread(base, extra)));
    expect(Object.keys(m)).toEqual(['b', 'a', 'nested', 'gone', 'c']);
    expect(m.nested).toBe(base.nested);
    expect('gone' in m).toBe(true);
  });

  it('orders integer-like keys as any object does', () => {
    const base = { z: 1, 10: 'ten', 2: 'two' };
    expect(Object.keys(merged(base, { 1: 'one' }))).toEqual(Object.keys(spread(base, { 1: 'one' })));
  });

  it("keeps a parsed payload's __proto__ key as an own key, not the prototype", () => {
    const data = JSON.parse('{"__proto__":{"admin":true},"id":"dem_1"}') as Record<string, unknown>;
    const m = merged(data, { event: 'crm.demand.created' }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    expect((m as { admin?: unknown }).admin).toBeUndefined();
    expect(JSON.stringify(m)).toBe('{"__proto__":{"admin":true},"id":"dem_1","event":"crm.demand.created"}');
    expect(JSON.stringify(m)).toBe(JSON.stringify(spread(data, { event: 'crm.demand.created' })));
  });

  it('leaves both inputs as they were', () => {
    const base = { a: 1 };
    const extra = { b: 2 };
    merged(base, extra);
    expect(base).toEqual({ a: 1 });
    expect(extra).toEqual({ b: 2 });
  });
});
