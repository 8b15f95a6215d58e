/** The endpoint workflow's state has its defaults in one place, for a new run and for one continued from an older version. */
import { describe, expect, it } from 'vitest';
import { initialState, withDefaults } from '../../src/workflows/endpoint-contract.js';

describe('endpoint workflow state', () => {
  it('starts unverified, active, not sending, with nothing known', () => {
    expect(withDefaults()).toEqual(initialState());
    expect(initialState()).toMatchObject({
      health: 'unverified',
      failureStreak: 0,
      active: true,
      sending: false,
      delivered: 0,
      held: null,
    });
  });

  it('keeps what an older run carried and fills in what it lacked; a failure it did not explain stays unexplained', () => {
    const carried = { health: 'degraded' as const, failureStreak: 6, active: true, changesSeen: 3, wakeups: 9, lastFailureAtMs: 1_000 };
    const state = withDefaults(carried);
    expect(state).toMatchObject({ ...carried, sending: false, delivered: 0, recordedNextAttemptAtMs: null, owed: null });
    expect(state.lastError).toBeUndefined();
    expect(withDefaults({ ...carried, lastError: null, delivered: 40 })).toMatchObject({ lastError: null, delivered: 40 });
  });
});
