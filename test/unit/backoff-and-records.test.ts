import { describe, expect, it } from 'vitest';
import { doublingBackoffMs } from '../../src/core/backoff.js';
import { isRecord } from '../../src/core/is-record.js';

describe('doublingBackoffMs', () => {
  it('starts at the base, doubles per failure and stops at the cap', () => {
    expect([0, 1, 2, 3].map((f) => doublingBackoffMs(500, f, 3_000))).toEqual([500, 1_000, 2_000, 3_000]);
    expect(doublingBackoffMs(100, 2)).toBe(400);
  });
});

describe('isRecord', () => {
  it('accepts JSON objects only', () => {
    expect(isRecord({ a: 1 })).toBe(true);
    for (const v of [null, undefined, [], 'x', 1, true]) expect(isRecord(v)).toBe(false);
  });
});
