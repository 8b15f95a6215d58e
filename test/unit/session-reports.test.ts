/**
 * The coalescing of direct sessions' reports to their workflows (src/delivery/session-reports.ts),
 * on fake timers: per endpoint at most one report per window, the first at once, the last always
 * sent, counts summed and the latest success kept; a failed report merged into the next.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AccountId, EndpointId } from '../../src/core/ids.js';
import { createSessionReports, mergeReports } from '../../src/delivery/session-reports.js';
import { applyReport, initialState, type DirectSessionsReport } from '../../src/workflows/endpoint-contract.js';

const A = 'ep-a' as EndpointId;
const B = 'ep-b' as EndpointId;
const ACCOUNT = 'acc-1' as AccountId;
const EVERY = 10_000;

const session = (posts: number, lastSuccessAtMs: number, code = 200): DirectSessionsReport => ({
  sessions: 1,
  posts,
  lastSuccessAtMs,
  lastResponseCode: code,
  endedAtMs: lastSuccessAtMs + 1,
});

function recorder(fail = () => false) {
  const sent: { id: EndpointId; report: DirectSessionsReport; atMs: number }[] = [];
  const reports = createSessionReports({
    everyMs: EVERY,
    send: async (id, _account, report) => {
      if (fail()) throw new Error('Temporal unreachable');
      sent.push({ id, report, atMs: Date.now() });
    },
  });
  return { sent, reports };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('session reports: at most one per endpoint per window, the last always sent', () => {
  it('the first session of an endpoint is reported at once', async () => {
    const { sent, reports } = recorder();
    reports.add(A, ACCOUNT, session(3, 1_000_000));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([{ id: A, report: session(3, 1_000_000), atMs: 1_000_000 }]);
  });

  it('a hundred short sessions within two windows cost three reports, whose sums are every session and POST, and the last names the latest success', async () => {
    const { sent, reports } = recorder();
    for (let i = 0; i < 100; i++) {
      reports.add(A, ACCOUNT, session(2, Date.now(), i === 99 ? 204 : 200));
      await vi.advanceTimersByTimeAsync(EVERY / 50);
    }
    await vi.advanceTimersByTimeAsync(EVERY);
    expect(sent.map((s) => s.atMs - 1_000_000)).toEqual([0, EVERY, 2 * EVERY]);
    expect(sent.reduce((n, s) => n + s.report.sessions, 0)).toBe(100);
    expect(sent.reduce((n, s) => n + s.report.posts, 0)).toBe(200);
    const last = sent.at(-1)!.report;
    expect(last.lastSuccessAtMs).toBe(1_000_000 + 99 * (EVERY / 50));
    expect(last.lastResponseCode).toBe(204);
    // Nothing more once everything is sent.
    await vi.advanceTimersByTimeAsync(5 * EVERY);
    expect(sent).toHaveLength(3);
  });

  it('endpoints have windows of their own', async () => {
    const { sent, reports } = recorder();
    reports.add(A, ACCOUNT, session(1, Date.now()));
    reports.add(B, ACCOUNT, session(1, Date.now()));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.id).sort()).toEqual([A, B]);
  });

  it('a session after a quiet window is reported at once again', async () => {
    const { sent, reports } = recorder();
    reports.add(A, ACCOUNT, session(1, Date.now()));
    await vi.advanceTimersByTimeAsync(3 * EVERY);
    reports.add(A, ACCOUNT, session(1, Date.now()));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent.map((s) => s.atMs - 1_000_000)).toEqual([0, 3 * EVERY]);
  });

  it('flush sends what waits at once (before a hand-over, at the worker stop)', async () => {
    const { sent, reports } = recorder();
    reports.add(A, ACCOUNT, session(1, Date.now()));
    await vi.advanceTimersByTimeAsync(1_000);
    reports.add(A, ACCOUNT, session(4, Date.now()));
    await reports.flush(A);
    expect(sent.map((s) => [s.atMs - 1_000_000, s.report.posts])).toEqual([
      [0, 1],
      [1_000, 4],
    ]);
  });

  it('a report that fails is kept and goes with the next window, nothing lost', async () => {
    let failing = true;
    const { sent, reports } = recorder(() => failing);
    reports.add(A, ACCOUNT, session(5, Date.now()));
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toHaveLength(0);
    failing = false;
    reports.add(A, ACCOUNT, session(2, Date.now() + 1));
    await vi.advanceTimersByTimeAsync(EVERY);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.report).toMatchObject({ sessions: 2, posts: 7, lastSuccessAtMs: 1_000_001 });
  });

  it('merging keeps the latest success and its code, whichever came first', () => {
    expect(mergeReports(session(1, 20, 201), session(2, 10, 200))).toEqual({
      sessions: 2,
      posts: 3,
      lastSuccessAtMs: 20,
      lastResponseCode: 201,
      endedAtMs: 21,
    });
  });
});

describe('the workflow takes a report in for its story only', () => {
  it('counts sessions and POSTs, takes a later success and its code, and never moves the latest success back', () => {
    const state = { ...initialState(), health: 'healthy' as const, lastSuccessAtMs: 100, lastResponseCode: 200 };
    applyReport(state, session(5, 300, 204));
    expect(state).toMatchObject({
      directSessions: 1,
      directPosts: 5,
      lastSuccessAtMs: 300,
      lastResponseCode: 204,
      directReportedAtMs: 301,
    });
    applyReport(state, session(2, 250, 201));
    expect(state).toMatchObject({
      directSessions: 2,
      directPosts: 7,
      lastSuccessAtMs: 300,
      lastResponseCode: 204,
      directReportedAtMs: 301,
    });
    // A failure after the reported success: the code shown stays the failure's; health and streak are untouched.
    Object.assign(state, { failureStreak: 1, lastFailureAtMs: 500, lastResponseCode: 500 });
    applyReport(state, session(1, 400, 200));
    expect(state).toMatchObject({ health: 'healthy', failureStreak: 1, lastSuccessAtMs: 400, lastResponseCode: 500 });
  });
});
