/** The weekly partitions of deliveries: which weeks to create ahead, which to compact, which have left the retention window. */
import { describe, expect, it } from 'vitest';
import {
  COMPACT_AFTER_MS,
  partitionIndexName,
  partitionIndexStatement,
  partitionsPastRetention,
  partitionsToCompact,
  partitionSuffix,
  periodsToCreate,
  periodStart,
  retentionCutoff,
  retentionDaysProblem,
  type PartitionBounds,
} from '../../src/core/delivery-partitions.js';

const DAY = 86_400_000;
const WEEK = 7 * DAY;
const at = (iso: string) => Date.parse(iso);
const week = (mondayIso: string): PartitionBounds => ({
  name: `deliveries_${partitionSuffix(at(mondayIso))}`,
  lowerMs: at(mondayIso),
  upperMs: at(mondayIso) + WEEK,
});

describe('periodStart', () => {
  it('is the Monday 00:00 UTC of the week, for any instant of it, before 1970 too', () => {
    expect(new Date(periodStart(at('2026-11-27T01:40:00Z'))).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(new Date(periodStart(at('2026-11-23T00:00:00Z'))).toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(new Date(periodStart(at('2026-11-22T23:59:59.999Z'))).toISOString()).toBe('2026-11-16T00:00:00.000Z');
    expect(new Date(periodStart(at('1969-12-31T12:00:00Z'))).toISOString()).toBe('1969-12-29T00:00:00.000Z');
  });

  it('names a week by its first day', () => {
    expect(partitionSuffix(at('2026-11-23T00:00:00Z'))).toBe('p20261123');
  });
});

describe('periodsToCreate', () => {
  const now = at('2026-11-27T01:40:00Z');

  it('is the current week and the 4 after it on an empty table, earliest first', () => {
    expect(periodsToCreate([], now).map((p) => new Date(p.lowerMs).toISOString().slice(0, 10))).toEqual([
      '2026-11-23',
      '2026-11-30',
      '2026-12-07',
      '2026-12-14',
      '2026-12-21',
    ]);
    expect(periodsToCreate([], now).every((p) => p.upperMs - p.lowerMs === WEEK)).toBe(true);
  });

  it('skips the weeks that exist and those the legacy partition (MINVALUE to its cutover) covers', () => {
    const legacy: PartitionBounds = { name: 'deliveries_legacy', lowerMs: null, upperMs: at('2026-12-07T00:00:00Z') };
    const made = periodsToCreate([legacy, week('2026-12-14T00:00:00Z')], now);
    expect(made.map((p) => new Date(p.lowerMs).toISOString().slice(0, 10))).toEqual(['2026-12-07', '2026-12-21']);
    const all = [legacy, week('2026-12-07T00:00:00Z'), week('2026-12-14T00:00:00Z'), week('2026-12-21T00:00:00Z')];
    expect(periodsToCreate(all, now)).toEqual([]);
  });
});

describe('retention', () => {
  const now = at('2026-11-27T00:00:00Z');

  it('cuts off the given days before now', () => {
    expect(retentionCutoff(now, 90)).toBe(now - 90 * DAY);
  });

  it('drops a partition only once its upper bound is at or before the cutoff, the legacy one included', () => {
    const cutoff = retentionCutoff(now, 7); // 2026-11-20
    const parts = [
      { name: 'deliveries_legacy', lowerMs: null, upperMs: at('2026-11-09T00:00:00Z') },
      week('2026-11-09T00:00:00Z'), // ends 11-16: past
      week('2026-11-16T00:00:00Z'), // ends 11-23, holds 11-20 and later: kept whole
      week('2026-11-23T00:00:00Z'),
    ];
    expect(partitionsPastRetention(parts, now, 7).map((p) => p.name)).toEqual(['deliveries_legacy', 'deliveries_p20261109']);
    // The bound exactly at the cutoff goes: every row in it is older than the window.
    const exact: PartitionBounds = { name: 'exact', lowerMs: cutoff - WEEK, upperMs: cutoff };
    expect(partitionsPastRetention([exact], now, 7)).toEqual([exact]);
    expect(partitionsPastRetention([{ ...exact, upperMs: cutoff + 1 }], now, 7)).toEqual([]);
  });

  it('accepts 1 to 3650 whole days only', () => {
    expect(retentionDaysProblem(1)).toBeUndefined();
    expect(retentionDaysProblem(3650)).toBeUndefined();
    for (const bad of [0, 3651, 1.5, Number.NaN]) expect(retentionDaysProblem(bad)).toMatch(/1 to 3650/);
  });
});

describe('partitionsToCompact', () => {
  const now = at('2026-11-27T12:00:00Z');
  const parts = [
    { name: 'deliveries_legacy', lowerMs: null, upperMs: at('2026-10-26T00:00:00Z') },
    week('2026-10-26T00:00:00Z'), // ends 11-02
    week('2026-11-02T00:00:00Z'), // ends 11-09
    week('2026-11-09T00:00:00Z'), // ends 11-16: 11.5 days ago, still retried and held
    week('2026-11-23T00:00:00Z'),
    { name: 'deliveries_open_ended', lowerMs: at('2026-11-30T00:00:00Z'), upperMs: null },
  ];

  it('takes the weeks that ended COMPACT_AFTER_MS ago or more, the newest first, the legacy one included', () => {
    expect(partitionsToCompact(parts, new Set(), now).map((p) => p.name)).toEqual([
      'deliveries_p20261102',
      'deliveries_p20261026',
      'deliveries_legacy',
    ]);
    // The bound exactly COMPACT_AFTER_MS ago is due.
    expect(partitionsToCompact(parts, new Set(), at('2026-11-16T00:00:00Z') + COMPACT_AFTER_MS)[0]!.name).toBe('deliveries_p20261109');
    expect(partitionsToCompact(parts, new Set(), at('2026-11-16T00:00:00Z') + COMPACT_AFTER_MS - 1)[0]!.name).toBe('deliveries_p20261102');
  });

  it('leaves the weeks compacted already', () => {
    expect(partitionsToCompact(parts, new Set(['deliveries_p20261102', 'deliveries_legacy']), now).map((p) => p.name)).toEqual([
      'deliveries_p20261026',
    ]);
  });
});

describe('partition indexes (an index a migration created ON ONLY the parent)', () => {
  const def =
    "CREATE INDEX deliveries_endpoint_status_page ON ONLY public.deliveries USING btree (endpoint_id, status, created_at DESC, id DESC) WHERE (status <> 'success'::text)";

  it('builds the same index on one partition, concurrently, named after the partition', () => {
    const name = partitionIndexName('deliveries_endpoint_status_page', 'deliveries', 'deliveries_p20261123');
    expect(name).toBe('deliveries_p20261123_endpoint_status_page');
    expect(partitionIndexStatement(def, name, 'deliveries_p20261123')).toBe(
      `CREATE INDEX CONCURRENTLY "deliveries_p20261123_endpoint_status_page" ON "deliveries_p20261123" USING btree (endpoint_id, status, created_at DESC, id DESC) WHERE (status <> 'success'::text)`,
    );
  });

  it('keeps UNIQUE, and refuses a definition that is not ON ONLY a parent', () => {
    expect(partitionIndexStatement('CREATE UNIQUE INDEX u ON ONLY public.deliveries USING btree (id, created_at)', 'p_u', 'p')).toBe(
      'CREATE UNIQUE INDEX CONCURRENTLY "p_u" ON "p" USING btree (id, created_at)',
    );
    expect(() => partitionIndexStatement('CREATE INDEX x ON public.deliveries USING btree (id)', 'p_x', 'p')).toThrow(/ON ONLY/);
  });

  it('refuses a name Postgres would cut to 63 bytes (two could collide)', () => {
    expect(() => partitionIndexName(`deliveries_${'x'.repeat(50)}`, 'deliveries', 'deliveries_p20261123')).toThrow(/63 bytes/);
  });
});
