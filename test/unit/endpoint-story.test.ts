import { describe, expect, it } from 'vitest';
import { currentDetails, curveStep, endpointLabel, formatDuration, waitSummary, type StoryState } from '../../src/core/endpoint-story.js';

const MIN = 60_000;
const T = Date.UTC(2026, 10, 23, 12, 0, 0);
const ref = { endpointId: 'ep-1', accountId: 'acc-1' };

describe('endpoint story', () => {
  it.each([
    [59_000, '59 s'],
    [8 * MIN, '8 min'],
    [60 * MIN, '1 h'],
    [90 * MIN, '1 h 30 min'],
    [14 * 24 * 60 * MIN, '14 days'],
  ])('formats %i ms as %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each([
    ['https://hooks.example.com/acme/orders?token=secret', 'hooks.example.com/acme/orders'],
    ['https://user:pw@hooks.example.com:8443/?a=1#frag', 'hooks.example.com:8443'],
    ['not a url', 'unreadable url'],
  ])('labels %s as %s (no credentials, query or fragment)', (url, label) => {
    expect(endpointLabel(url)).toBe(label);
  });

  it('names the step of the curve', () => {
    expect(curveStep(4)).toBe('retry 4 of the curve: 8 min after the last failure');
    expect(curveStep(9)).toBe('retry 9 of the curve: 1 h after the last failure');
  });

  it('says what each wait is for', () => {
    const failing: StoryState = { active: true, health: 'healthy', failureStreak: 4, sending: true, lastFailureAtMs: T, nextDueAtMs: T };
    expect(waitSummary(failing, { delayMs: 8 * MIN, reconcile: false }, T)).toBe(
      'next POST in 8 min: retry 4 of the curve: 8 min after the last failure',
    );
    // A delivery whose own retry comes after the endpoint's pacing allows.
    expect(waitSummary({ ...failing, nextDueAtMs: T + 20 * MIN }, { delayMs: 20 * MIN, reconcile: false }, T)).toBe(
      'next POST in 20 min: the earliest delivery’s own retry time',
    );
    const paused: StoryState = {
      active: true,
      health: 'paused',
      failureStreak: 15,
      sending: false,
      nextExpiryAtMs: T + 14 * 24 * 60 * MIN,
    };
    expect(waitSummary(paused, { delayMs: 60 * MIN, reconcile: true }, T)).toBe(
      'idle (not sending: paused (circuit open); hold expiry in 14 days): re-read the endpoint in 1 h',
    );
    expect(waitSummary(paused, { delayMs: 59_000, reconcile: false }, T)).toBe('hold expiry in 59 s');
  });

  it('tells health, streak, next POST, backlog and the last failure in Markdown', () => {
    const s: StoryState = {
      active: true,
      health: 'degraded',
      failureStreak: 6,
      sending: true,
      lastFailureAtMs: T,
      nextDueAtMs: T - MIN,
      urlLabel: 'hooks.example.com/acme',
      lastResponseCode: 503,
      lastFailureCode: 503,
      lastError: 'non_2xx',
      streakStartedAtMs: T - 60 * MIN,
      owed: 12,
      held: 0,
    };
    const text = currentDetails(ref, s, T);
    expect(text.split('\n').slice(0, 8)).toEqual([
      '**hooks.example.com/acme** · account `acc-1`',
      '',
      '- **health**: degraded, active: sending, one POST at a time',
      '- **failure streak**: 6 since 2026-11-23T11:00:00Z',
      '- **next POST**: 2026-11-23T12:32:00Z (retry 6 of the curve: 32 min after the last failure)',
      '- **deliveries owed**: 12 waiting, 0 held',
      '- **last failure**: 2026-11-23T12:00:00Z, HTTP 503 (non_2xx)',
      '- **last success**: none',
    ]);
    // A timeout has no code; a state carried from before the story knows no reason.
    expect(currentDetails(ref, { ...s, lastFailureCode: null, lastError: 'timeout' }, T)).toContain('no answer (timeout)');
    expect(currentDetails(ref, { ...s, lastError: undefined, owed: undefined, urlLabel: undefined }, T)).toMatch(
      /\*\*endpoint ep-1\*\*[\s\S]*unknown waiting[\s\S]*reason not recorded/,
    );
  });

  it("shows the latest success and the direct sessions reported to the workflow, and keeps its last line out of the Web UI's cut", () => {
    const healthy: StoryState = {
      active: true,
      health: 'healthy',
      failureStreak: 0,
      sending: true,
      lastSuccessAtMs: T - MIN,
      lastResponseCode: 204,
      lastFailureAtMs: T - 60 * MIN,
      delivered: 3,
      directSessions: 4,
      directPosts: 90,
      directReportedAtMs: T - 30_000,
    };
    const text = currentDetails(ref, healthy, T, 'deliver due: concurrent lanes until the first failure');
    expect(text).toContain('- **last success**: 2026-11-23T11:59:00Z, HTTP 204');
    expect(text).toContain('- **POSTs**: 3 by the workflow');
    expect(text).toContain('- **direct sessions**: 90 POSTs, all 2xx, in 4 sessions, reported up to 2026-11-23T11:59:30Z');
    // The Web UI cuts the frame ~30 px short: a paragraph of a no-break space takes the cut, not the last line.
    expect(text.endsWith('_as of 2026-11-23T12:00:00Z_\n\n\u00a0\n')).toBe(true);
    // A failure after the latest success: its code is the failure's, not shown as the success's.
    expect(currentDetails(ref, { ...healthy, lastFailureAtMs: T }, T)).toContain('- **last success**: 2026-11-23T11:59:00Z\n');
    expect(currentDetails(ref, { ...healthy, directSessions: 0 }, T)).toContain('- **direct sessions**: none reported');
  });
});
