/** SPEC 3.2, one row per line of its table, against the one module that holds the rules. */
import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  afterRound,
  compactOutcomes,
  afterSuccess,
  afterTest,
  newEndpoint,
  planPatch,
  sends,
  type EndpointConfig,
  type Health,
} from '../../src/core/health.js';

const config: EndpointConfig = {
  url: 'https://a.example/hooks',
  events: ['messages'],
  active: true,
  customerId: null,
  secret: 'whsec_old_secret_value',
  authorization: 'Bearer a',
};
const streakOf = (n: number, health: Health = 'healthy') => ({ health, failureStreak: n });

describe('SPEC 3.2 transitions of an endpoint', () => {
  it.each([
    [
      '(none) → POST /webhooks, valid body → unverified, active as requested',
      () => [newEndpoint(true), newEndpoint(false)],
      [
        { health: 'unverified', failureStreak: 0, active: true },
        { health: 'unverified', failureStreak: 0, active: false },
      ],
    ],
    [
      'any → test answered 2xx → verified (healthy), streak 0, activated',
      () => afterTest(true),
      { health: 'healthy', failureStreak: 0, active: true, pausedAt: null },
    ],
    ['any → test non-2xx, timeout or connection error → unchanged', () => afterTest(false), null],
    [
      'any → PATCH url → unverified',
      () => planPatch(config, { url: 'https://b.example/hooks' }),
      { changes: { url: 'https://b.example/hooks' }, invalidatesVerification: true, stopsSending: true },
    ],
    [
      'any → PATCH headers.Authorization → unverified',
      () => planPatch(config, { authorization: 'Bearer b' }),
      { changes: { authorization: 'Bearer b' }, invalidatesVerification: true, stopsSending: true },
    ],
    [
      'any → PATCH only events → health not restarted',
      () => planPatch(config, { events: ['messages', 'crm'] }),
      { changes: { events: ['messages', 'crm'] }, invalidatesVerification: false, stopsSending: false },
    ],
    [
      'any → PATCH only secret → health not restarted',
      () => planPatch(config, { secret: 'whsec_new_secret_value' }),
      { changes: { secret: 'whsec_new_secret_value' }, invalidatesVerification: false, stopsSending: false },
    ],
    [
      'any → PATCH active=false → health unchanged, no new deliveries',
      () => planPatch(config, { active: false }),
      { changes: { active: false }, invalidatesVerification: false, stopsSending: true },
    ],
    [
      'any → PATCH active=true alone on an inactive endpoint → verification_required',
      () => planPatch({ ...config, active: false }, { active: true }),
      { refused: 'verification_required' },
    ],
    [
      'verified → real delivery fails → same health, streak +1',
      () => afterFailure(streakOf(2)),
      { health: 'healthy', failureStreak: 3, alert: null, paused: false },
    ],
    [
      'verified → streak crosses 5, 10, 15 → the owner is alerted',
      () => [4, 9, 14].map((n) => afterFailure(streakOf(n, n < 5 ? 'healthy' : 'degraded')).alert),
      [5, 10, 15],
    ],
    [
      'verified → streak reaches 15 → paused, active unchanged',
      () => afterFailure(streakOf(14, 'degraded')),
      { health: 'paused', failureStreak: 15, alert: 15, paused: true },
    ],
    [
      'paused → test 2xx → verified, the queue resumes',
      () => [afterTest(true)!.health, sends(afterTest(true)!.active, afterTest(true)!.health)],
      ['healthy', true],
    ],
  ])('%s', (_line, run, expected) => {
    expect(run()).toEqual(expected);
  });

  it('DECISIONS: degraded from streak 5; a successful real delivery resets the streak and the health', () => {
    expect(afterFailure(streakOf(4)).health).toBe('degraded');
    expect(afterSuccess(streakOf(9, 'degraded'))).toEqual({ health: 'healthy', failureStreak: 0, alert: null, paused: false });
  });

  it('a repeated PATCH changes nothing; an empty Authorization removes the stored one', () => {
    expect(
      planPatch(config, { url: config.url, events: [...config.events], secret: config.secret, active: true, customerId: null }),
    ).toEqual({ changes: {}, invalidatesVerification: false, stopsSending: false });
    expect(planPatch(config, { authorization: '' })).toMatchObject({ changes: { authorization: null }, invalidatesVerification: true });
    expect(planPatch({ ...config, authorization: null }, { authorization: null })).toMatchObject({ changes: {} });
  });

  it('a round while healthy: the failures in flight together are one failure of the streak; a later success resets it', () => {
    const start = {
      ...streakOf(0),
      lastSuccessAtMs: null,
      lastFailureAtMs: null,
      lastResponseCode: null,
      streakStartedAtMs: null,
      pausedAtMs: null,
    };
    const fails = Array.from({ length: 16 }, (_, i) => ({ ok: false, responseCode: 503, atMs: 1_000 + i }));
    const { health, alerts } = afterRound(start, fails);
    expect(health).toMatchObject({
      health: 'healthy',
      failureStreak: 1,
      lastFailureAtMs: 1_015,
      lastResponseCode: 503,
      streakStartedAtMs: 1_000,
    });
    expect(alerts).toEqual([]);
    const mixed = afterRound(start, [
      { ok: false, responseCode: 500, atMs: 5 },
      { ok: true, responseCode: 200, atMs: 9 },
      { ok: false, responseCode: 500, atMs: 7 },
    ]);
    expect(mixed.health).toMatchObject({
      failureStreak: 0,
      health: 'healthy',
      lastSuccessAtMs: 9,
      lastFailureAtMs: 7,
      lastResponseCode: 200,
      streakStartedAtMs: null,
    });
  });

  it('a session reports few outcomes with the same effect as all of them: compactOutcomes keeps at most four', () => {
    // A small deterministic generator: the same sequences on every run.
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let run = 0; run < 500; run++) {
      const streak = Math.floor(random() * 16);
      const start = {
        ...streakOf(streak, streak >= 15 ? 'paused' : streak >= 5 ? 'degraded' : 'healthy'),
        lastSuccessAtMs: null,
        lastFailureAtMs: streak > 0 ? 1 : null,
        lastResponseCode: null,
        streakStartedAtMs: streak > 0 ? 1 : null,
        pausedAtMs: null,
      };
      const outcomes = Array.from({ length: Math.floor(random() * 40) }, () => {
        const ok = random() < 0.8;
        return { ok, responseCode: ok ? 200 : 500 + Math.floor(random() * 4), atMs: 10 + Math.floor(random() * 1_000) };
      });
      const compacted = compactOutcomes(outcomes);
      expect(compacted.length).toBeLessThanOrEqual(outcomes.length);
      expect(compacted.length).toBeLessThanOrEqual(4);
      expect(afterRound(start, compacted)).toEqual(afterRound(start, outcomes));
    }
    expect(compactOutcomes(Array.from({ length: 5_000 }, (_, i) => ({ ok: true, responseCode: 200, atMs: i })))).toEqual([
      { ok: true, responseCode: 200, atMs: 4_999 },
    ]);
  });

  it('a failing probe that reaches 15 alerts once with the streak start and opens the circuit', () => {
    const start = {
      ...streakOf(14, 'degraded'),
      lastSuccessAtMs: null,
      lastFailureAtMs: 1,
      lastResponseCode: 500,
      streakStartedAtMs: 100,
      pausedAtMs: null,
    };
    expect(afterRound(start, [{ ok: false, responseCode: null, atMs: 900 }])).toEqual({
      health: { ...start, health: 'paused', failureStreak: 15, lastFailureAtMs: 900, lastResponseCode: null, pausedAtMs: 900 },
      alerts: [{ streak: 15, streakStartedAtMs: 100 }],
    });
  });
});
