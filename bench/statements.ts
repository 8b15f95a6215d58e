/**
 * `npm run bench -- --statements`: which statements each phase ran, from pg_stat_statements
 * (shipped with the embedded build, loaded only with this flag: it costs a little on every
 * statement). Reset at a phase's start, read at its end, written to statements.txt beside the logs.
 */
import fs from 'node:fs';
import type pg from 'pg';

/** Postgres server flags that load the extension (given at start, so only for a server the bench starts). */
export const STATEMENT_STATS_SETTINGS = {
  shared_preload_libraries: 'pg_stat_statements',
  'pg_stat_statements.track_planning': 'on',
  // The time of each block read from outside shared_buffers, per statement and in pg_stat_io.
  track_io_timing: 'on',
};

export interface StatementStat {
  calls: number;
  rows: number;
  execMs: number;
  planMs: number;
  /** Times it was planned: fewer than its calls once a prepared statement keeps a generic plan. */
  plans: number;
  /** Blocks dirtied and WAL written: what a statement costs the commit and the checkpointer. */
  dirtied: number;
  walKiB: number;
  /** Blocks read from outside shared_buffers, and the time reading them (track_io_timing). */
  read: number;
  readMs: number;
  /** The slowest call: a tail a mean hides (a GIN pending-list flush, a lock wait). */
  maxMs: number;
  /** Full-page images written to WAL: the first change to a page after a checkpoint writes it whole. */
  fpi: number;
  query: string;
}

export async function enableStatementStats(db: pg.Pool): Promise<void> {
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
}

async function resetStatementStats(db: pg.Pool): Promise<void> {
  await db.query('SELECT pg_stat_statements_reset()');
}

/**
 * Statements since the last reset, most total time first: this database's, or with `allDatabases`
 * every database's, each query prefixed with its database (the production shape's Temporal server
 * keeps its own databases on the same server).
 */
async function readStatementStats(db: pg.Pool, top = 20, opts: { allDatabases?: boolean } = {}): Promise<StatementStat[]> {
  const { rows } = await db.query<StatementStat>(
    `SELECT calls::int, rows::int, round(total_exec_time::numeric, 1)::float AS "execMs", round(total_plan_time::numeric, 1)::float AS "planMs", plans::int,
            shared_blks_dirtied::int AS dirtied, round(wal_bytes / 1024)::int AS "walKiB",
            shared_blks_read::int AS read, round(shared_blk_read_time::numeric, 1)::float AS "readMs",
            round(max_exec_time::numeric, 1)::float AS "maxMs", wal_fpi::int AS fpi,
            CASE WHEN $2 THEN '[' || d.datname || '] ' ELSE '' END || regexp_replace(query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE ($2 OR d.datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'
     ORDER BY total_exec_time + total_plan_time DESC LIMIT $1`,
    [top, opts.allDatabases === true],
  );
  return rows;
}

function writeStatementStats(file: string, phase: string, deliveries: number, stats: StatementStat[]): void {
  const per = (n: number) => (deliveries > 0 ? (n / deliveries).toFixed(3) : '-');
  const lines = [
    `== ${phase} (${deliveries} deliveries; per delivery or event: calls, exec+plan ms)`,
    ...stats.map(
      (s) =>
        `${String(s.calls).padStart(7)} ${per(s.calls).padStart(6)}  ${String(s.execMs).padStart(8)} + ${String(s.planMs).padStart(6)} ms (${String(s.plans).padStart(5)} plans) ${per(s.execMs + s.planMs).padStart(6)}  rows ${String(s.rows).padStart(6)} dirtied ${String(s.dirtied).padStart(5)} max ${String(s.maxMs).padStart(7)} ms read ${String(s.read).padStart(6)} (${String(s.readMs).padStart(6)} ms) fpi ${String(s.fpi).padStart(6)} wal ${String(s.walKiB).padStart(6)} KiB  ${s.query.slice(0, 160)}`,
    ),
    '',
  ];
  fs.appendFileSync(file, lines.join('\n') + '\n');
}

/** A phase's statements: counted from `start()`, written to `file` by `finish` with the phase's name and size. */
export function phaseStatements(db: pg.Pool, file: string, opts: { allDatabases?: boolean } = {}) {
  return {
    start: () => resetStatementStats(db),
    async finish(phase: string, deliveries: number): Promise<void> {
      writeStatementStats(file, phase, deliveries, await readStatementStats(db, opts.allDatabases ? 30 : 20, opts));
    },
  };
}
