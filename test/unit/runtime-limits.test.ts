/** The delivery session's timing limits hold together, and a POST timeout that would break them is refused at start. */
import { describe, expect, it } from 'vitest';
import {
  DELIVER_DUE_TIMEOUT_MS,
  HEARTBEAT_EVERY_MS,
  HEARTBEAT_TIMEOUT_MS,
  LEASE_MS,
  MAX_POST_MS,
  SESSION_MS,
  deliveryTimeoutProblem,
} from '../../src/core/runtime-limits.js';
import { loadConfig } from '../../src/runtime/config.js';

describe('delivery timing limits', () => {
  it('are the values the workflow and the activities have always used', () => {
    // Written from the design, not imported: a drift here changes running workflows' timeouts.
    expect(SESSION_MS).toBe(60_000);
    expect(DELIVER_DUE_TIMEOUT_MS).toBe(3 * 60_000);
    expect(HEARTBEAT_EVERY_MS).toBe(2_000);
    expect(HEARTBEAT_TIMEOUT_MS).toBe(10_000);
    expect(LEASE_MS).toBe(4 * 60_000);
    expect(MAX_POST_MS).toBe(120_000);
  });

  it('derive from one another: a session and its last POST fit the activity, leases outlive it, heartbeats beat the timeout', () => {
    expect(SESSION_MS + MAX_POST_MS).toBeLessThanOrEqual(DELIVER_DUE_TIMEOUT_MS);
    expect(LEASE_MS).toBeGreaterThan(DELIVER_DUE_TIMEOUT_MS);
    expect(HEARTBEAT_TIMEOUT_MS).toBeGreaterThanOrEqual(3 * HEARTBEAT_EVERY_MS);
  });

  it('accept a POST timeout up to 120 s and refuse one above, or zero', () => {
    expect(deliveryTimeoutProblem(10_000)).toBeNull();
    expect(deliveryTimeoutProblem(120_000)).toBeNull();
    expect(deliveryTimeoutProblem(120_001)).toMatch(/at most 120000 ms/);
    expect(deliveryTimeoutProblem(0)).toMatch(/at least 1 ms/);
  });
});

describe('loadConfig and DELIVERY_TIMEOUT_MS', () => {
  it('takes 120 s, the bound', () => {
    expect(loadConfig({ DELIVERY_TIMEOUT_MS: '120000' }).deliveryTimeoutMs).toBe(120_000);
  });

  it('refuses a value above 120 s at start, naming the variable and the bound', () => {
    expect(() => loadConfig({ DELIVERY_TIMEOUT_MS: '120001' })).toThrow(/DELIVERY_TIMEOUT_MS: must be at most 120000 ms.*\(got "120001"\)/);
  });

  it('refuses a zero timeout, under which every POST would time out', () => {
    expect(() => loadConfig({ DELIVERY_TIMEOUT_MS: '0' })).toThrow(/DELIVERY_TIMEOUT_MS: must be at least 1 ms/);
  });
});
