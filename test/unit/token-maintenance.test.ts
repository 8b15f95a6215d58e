/** The pure rules of photoapp token maintenance and of token statuses read at a later time (SPEC 3.4). */
import { describe, expect, it } from 'vitest';
import { maintenanceDetails } from '../../src/core/maintenance.js';
import { dueForRenewal, maintenanceWindow, tokenStatusAt } from '../../src/core/token-status.js';

const now = new Date('2026-11-26T12:00:00Z');
const inDays = (d: number) => new Date(now.getTime() + d * 86_400_000);

describe('dueForRenewal', () => {
  it('renews a usable token ending within 14 days, never one that does not expire or needs a reconnect', () => {
    expect(dueForRenewal('ok', inDays(13.9), now)).toBe(true);
    expect(dueForRenewal('expiring', inDays(2), now)).toBe(true);
    expect(dueForRenewal(null, inDays(2), now)).toBe(true);
    expect(dueForRenewal('ok', inDays(14.1), now)).toBe(false);
    expect(dueForRenewal('ok', null, now)).toBe(false);
    for (const dead of ['expired', 'invalid', 'revoked'] as const) expect(dueForRenewal(dead, inDays(2), now)).toBe(false);
  });

  it('looks at statuses read more than 6 hours ago', () => {
    expect(maintenanceWindow(now).checkedBefore.toISOString()).toBe('2026-11-26T06:00:00.000Z');
  });
});

describe('tokenStatusAt', () => {
  it('turns a stored ok into expiring within 7 days and expired past its date; other statuses stay', () => {
    expect(tokenStatusAt('ok', inDays(8), now)).toBe('ok');
    expect(tokenStatusAt('ok', inDays(6), now)).toBe('expiring');
    expect(tokenStatusAt('expiring', inDays(-0.01), now)).toBe('expired');
    expect(tokenStatusAt('expiring', inDays(9), now)).toBe('ok');
    expect(tokenStatusAt('ok', null, now)).toBe('ok');
    expect(tokenStatusAt('revoked', inDays(30), now)).toBe('revoked');
    expect(tokenStatusAt('unknown', inDays(1), now)).toBe('unknown');
  });
});

describe('maintenanceDetails', () => {
  it('says what the run is doing, then what it did', () => {
    expect(maintenanceDetails(undefined, now.getTime())).toContain('running since 2026-11-26T12:00:00.000Z');
    const done = maintenanceDetails(
      { tokens: { renewed: 2, checked: 5, failed: 1, needReconnect: 3, providerConfigured: true } },
      now.getTime(),
    );
    expect(done).toContain('- **photoapp tokens**: 2 renewed, 5 checked, 1 failed (tried again next run), 3 need a reconnect');
    expect(
      maintenanceDetails({ tokens: { renewed: 0, checked: 0, failed: 0, needReconnect: 0, providerConfigured: false } }, now.getTime()),
    ).toContain('skipped: no provider configured');
  });

  it('says which indexes the partitions job built, which replaced ones it dropped and which week it compacted', () => {
    const tokens = { renewed: 0, checked: 0, failed: 0, needReconnect: 0, providerConfigured: false };
    const details = maintenanceDetails(
      {
        tokens,
        partitions: {
          created: [],
          partitions: 9,
          indexesBuilt: ['deliveries_p20261123_endpoint_list'],
          indexesReplaced: ['deliveries_endpoint_page'],
          compacted: { partition: 'deliveries_p20261102', indexBytesBefore: 3 * 2 ** 20, indexBytesAfter: 1.5 * 2 ** 20 },
        },
      },
      now.getTime(),
    );
    expect(details).toContain(
      '- **delivery partitions**: none to create; 9 partitions; indexes built: deliveries_p20261123_endpoint_list; ' +
        'replaced indexes dropped: deliveries_endpoint_page; compacted deliveries_p20261102: indexes 3.0 MiB → 1.5 MiB',
    );
    // Runs recorded before these jobs existed say only what they did.
    expect(maintenanceDetails({ tokens, partitions: { created: ['2026-12-21'], partitions: 9 } }, now.getTime())).toContain(
      '- **delivery partitions**: created 2026-12-21; 9 partitions\n',
    );
  });
});
