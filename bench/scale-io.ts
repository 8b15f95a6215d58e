/**
 * Where Postgres read its blocks from during a phase (pg_stat_io, server-wide): blocks read from
 * outside shared_buffers, and the time spent reading them (with track_io_timing, which the bench
 * turns on with --statements), by the kind of backend that read them. Beside the shared-buffer hits,
 * it says whether a phase's statements ran from memory, and whether autovacuum read beside them.
 */
import type pg from 'pg';

export interface IoByBackend {
  backend: string;
  reads: number;
  readMs: number;
  hits: number;
}

export async function ioSnapshot(db: pg.Pool): Promise<IoByBackend[]> {
  const { rows } = await db.query<IoByBackend>(
    `SELECT backend_type AS backend, coalesce(sum(reads), 0)::float AS reads, coalesce(sum(read_time), 0)::float AS "readMs",
            coalesce(sum(hits), 0)::float AS hits
     FROM pg_stat_io GROUP BY backend_type`,
  );
  return rows;
}

/** What each kind of backend read between two snapshots; the kinds that read or hit anything. */
export function ioDelta(before: IoByBackend[], after: IoByBackend[]): IoByBackend[] {
  const was = new Map(before.map((b) => [b.backend, b]));
  return after
    .map((a) => {
      const b = was.get(a.backend);
      return { backend: a.backend, reads: a.reads - (b?.reads ?? 0), readMs: a.readMs - (b?.readMs ?? 0), hits: a.hits - (b?.hits ?? 0) };
    })
    .filter((d) => d.reads > 0 || d.hits > 0)
    .sort((x, y) => y.reads - x.reads);
}

/** "client backend 2,122 blocks read (0.53 per delivery), 0.06 s reading, 99.6 % hits; autovacuum worker …": the kinds that read any. */
export function ioLine(d: IoByBackend[], per?: number): string {
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return d
    .filter((x) => x.reads > 0)
    .map((x) => {
      const hitRate = x.hits + x.reads > 0 ? (100 * x.hits) / (x.hits + x.reads) : 100;
      const each = per ? ` (${(x.reads / per).toFixed(2)} per delivery)` : '';
      return `${x.backend} ${n(x.reads)} blocks read${each}, ${(x.readMs / 1000).toFixed(2)} s reading, ${hitRate.toFixed(1)} % hits`;
    })
    .join('; ');
}
