/**
 * History at scale for `npm run bench:scale`, synthesised in SQL (INSERT … SELECT over
 * generate_series): Accounts with endpoints, events, their deliveries and those deliveries'
 * attempts, spread over a span of days, as the service would have stored them.
 *
 * Every id is derived from its index (md5 of a tag and the index, as a uuid), so a delivery names
 * its event and endpoint without a look-up, and a fill can go on where an earlier step stopped.
 * The shape of the data:
 * - Account a has `endpointsPerAccount` endpoints; Accounts take turns in periods of about 6·A
 *   events, Account a a run of w_a ∝ ((a+1)/A)^⅓ − (a/A)^⅓ of them: Account 0 holds A^(-1/3) of
 *   everything (10 % at 1,000 Accounts), the rest a long tail; each Account's cursors are 1, 2, 3…
 *   without a gap, as the service hands them out;
 * - delivery j is of event ⌊j·E/D⌋ (E/D deliveries per event), to its Account's endpoint j mod slots;
 * - 96 % succeed at once, 3 % on the second attempt, 1 % are exhausted after 6 attempts (30 s apart):
 *   nothing is left owed, so no engine path picks the history up;
 * - event n happened at from + (n/E)·span: cursors and created_at grow together.
 *
 * The schema is read at run time, so the fill works before and after the migrations that change it:
 * weekly partitions are created when deliveries and delivery_attempts are partitioned; attempts get
 * `delivery_created_at` when they have it; events get their payload as `data` (jsonb) or `payload`
 * (migration 0031; encoded as the service encodes it), whichever they have, and `stream_data` only where it is required; an
 * hourly rollup table (an endpoint, an hour and counts) is filled from the deliveries when there is one.
 */
import type pg from 'pg';
import { encodePayload } from '../src/db/payload-bytes.js';

export interface FillShape {
  accounts: number;
  endpointsPerAccount: number;
  /** Oldest and newest event of the fill. */
  from: Date;
  to: Date;
}

export type Db = pg.Pool | pg.PoolClient;

const TAG = 'bench-scale';
/** A version-4 uuid (as the API's checks want) from the md5 of `text`'s SQL. */
export const uuidOfSql = (text: string) => `overlay(overlay(md5(${text}) placing '4' from 13) placing '8' from 17)::uuid`;
export const accountIdSql = (idx: string) => uuidOfSql(`'${TAG}:a:' || (${idx})`);
export const endpointIdSql = (account: string, slot: string) => uuidOfSql(`'${TAG}:p:' || (${account}) || ':' || (${slot})`);
const eventIdSql = (tag: string, n: string) => uuidOfSql(`'${tag}:e:' || (${n})`);
const deliveryIdSql = (tag: string, j: string) => uuidOfSql(`'${tag}:d:' || (${j})`);

/** The id of Account `idx` or of its endpoint `slot`, as the fill made them. */
export async function fillIds(db: Db, account: number, slot = 0): Promise<{ accountId: string; endpointId: string }> {
  const { rows } = await db.query<{ a: string; p: string }>(
    `SELECT ${accountIdSql('$1::int')} AS a, ${endpointIdSql('$1::int', '$2::int')} AS p`,
    [account, slot],
  );
  return { accountId: rows[0]!.a, endpointId: rows[0]!.p };
}

/** A session for bulk writes: no flush per commit, no per-row triggers or foreign-key checks (the rows are consistent by construction). */
export async function bulkSession(db: pg.PoolClient): Promise<{ triggersOff: boolean }> {
  await db.query(`SET synchronous_commit = off`);
  await db.query(`SET work_mem = '256MB'`);
  await db.query(`SET maintenance_work_mem = '512MB'`);
  try {
    await db.query(`SET session_replication_role = replica`);
    return { triggersOff: true };
  } catch {
    return { triggersOff: false };
  }
}

async function columnsOf(db: Db, table: string): Promise<Map<string, { nullable: boolean; hasDefault: boolean }>> {
  const { rows } = await db.query<{ column_name: string; is_nullable: string; column_default: string | null }>(
    `SELECT column_name, is_nullable, column_default FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
    [table],
  );
  return new Map(rows.map((r) => [r.column_name, { nullable: r.is_nullable === 'YES', hasDefault: r.column_default !== null }]));
}

/** Fails with the column's name when the table has a required column the fill does not know. */
function checkCovered(table: string, columns: Map<string, { nullable: boolean; hasDefault: boolean }>, given: string[]): void {
  const missing = [...columns].filter(([name, c]) => !c.nullable && !c.hasDefault && !given.includes(name)).map(([name]) => name);
  if (missing.length)
    throw new Error(`bench/scale-fill.ts does not know how to fill ${table}.${missing.join(`, ${table}.`)} (required, no default)`);
}

export async function isPartitioned(db: Db, table: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass($1)`, [table]);
  return rows.length > 0;
}

/** A partition of `table` with its range bounds in ms (MINVALUE and MAXVALUE as ∓Infinity; a DEFAULT partition has none). */
export interface Partition {
  name: string;
  from: number | null;
  to: number | null;
}

export async function partitionsOf(db: Db, table: string): Promise<Partition[]> {
  const { rows } = await db.query<{ name: string; bound: string }>(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
     FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass($1)`,
    [table],
  );
  const at = (v: string) => (v === 'MINVALUE' ? -Infinity : v === 'MAXVALUE' ? Infinity : new Date(v.replace(/^'|'$/g, '')).getTime());
  return rows
    .map((r) => {
      const m = /FROM \((MINVALUE|'[^']+')\) TO \((MAXVALUE|'[^']+')\)/.exec(r.bound);
      return { name: r.name, from: m ? at(m[1]!) : null, to: m ? at(m[2]!) : null };
    })
    .sort((x, y) => (x.from ?? Infinity) - (y.from ?? Infinity));
}

const WEEK_MS = 7 * 86_400_000;
/** Monday 00:00 UTC of the week `t` is in (date_trunc('week')). */
const weekStart = (t: number) => {
  const d = new Date(t);
  const day = (d.getUTCDay() + 6) % 7;
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - day);
};
const stamp = (t: number) => new Date(t).toISOString().slice(0, 10).replaceAll('-', '');

/**
 * Weekly partitions of deliveries and delivery_attempts covering [from, to), so that the history
 * lies in weeks as it would after months of service. A partition from MINVALUE (migration 0029
 * attaches the tables as they were, up to a cutover) is detached and dropped when it is empty, as
 * it is on a new database; otherwise the history before its end lands in it. The weeks are made
 * by `create_delivery_partitions` (migration 0029) when there is one, else as
 * `<table>_pYYYYMMDD PARTITION OF <table>`, from Monday 00:00 UTC, cut where a partition already
 * covers part of a week. Returns what was done.
 */
export async function ensureWeeklyPartitions(db: Db, from: Date, to: Date): Promise<string[]> {
  const done: string[] = [];
  for (const table of ['delivery_attempts', 'deliveries']) {
    for (const p of await partitionsOf(db, table)) {
      if (p.from !== -Infinity) continue;
      const { rows } = await db.query(`SELECT 1 FROM ${p.name} LIMIT 1`);
      if (rows.length) continue;
      await db.query(`ALTER TABLE ${table} DETACH PARTITION ${p.name}`);
      await db.query(`DROP TABLE ${p.name}`);
      done.push(`dropped the empty ${p.name}`);
    }
  }
  const { rows: fn } = await db.query(`SELECT 1 FROM pg_proc WHERE proname = 'create_delivery_partitions'`);
  for (const table of fn.length ? ['deliveries'] : ['deliveries', 'delivery_attempts']) {
    const existing = (await partitionsOf(db, table)).filter((p) => p.from !== null && p.to !== null);
    for (let w = weekStart(from.getTime()); w < to.getTime();) {
      let lo = w;
      let hi = w + WEEK_MS;
      // The part of the week no partition holds yet (bounds are taken as they are; gaps between them are filled).
      for (const p of existing) {
        if (p.from! <= lo && p.to! > lo) lo = Math.min(hi, p.to!);
        if (p.from! > lo && p.from! < hi) hi = p.from!;
      }
      if (lo < hi) {
        if (fn.length) await db.query(`SELECT create_delivery_partitions($1, $2)`, [new Date(lo), new Date(hi)]);
        else
          await db.query(
            `CREATE TABLE IF NOT EXISTS ${table}_p${stamp(lo)} PARTITION OF ${table} FOR VALUES FROM ('${new Date(lo).toISOString()}') TO ('${new Date(hi).toISOString()}')`,
          );
        done.push(`${fn.length ? 'deliveries and delivery_attempts' : table}_p${stamp(lo)}`);
        existing.push({ name: '', from: lo, to: hi });
      }
      // On to the rest of this week after a partition that cut it, or to the next week.
      w = hi < w + WEEK_MS ? hi : w + WEEK_MS;
    }
  }
  return done;
}

/** Accounts 0..accounts-1 and their endpoints (never POSTed to: every delivery of the fill is terminal). */
export async function fillAccounts(db: Db, shape: FillShape, from = 0): Promise<void> {
  await db.query(
    `INSERT INTO accounts (id, name, owner_email, plan, created_at)
     SELECT ${accountIdSql('a')}, 'scale ' || a, 'scale@example.com', 'paid', $3::timestamptz FROM generate_series($1::int, $2::int - 1) a
     ON CONFLICT (id) DO NOTHING`,
    [from, shape.accounts, shape.from],
  );
  await db.query(
    `INSERT INTO endpoints (id, account_id, url, events, active, health_status, failure_streak, secret_ciphertext, verified_at, created_at)
     SELECT ${endpointIdSql('a', 's')}, ${accountIdSql('a')}, 'https://scale-' || a || '-' || s || '.example.com/hook', ARRAY['crm'],
            true, 'healthy', 0, '\\x00'::bytea, $3::timestamptz, $3::timestamptz
     FROM generate_series($1::int, $2::int - 1) a, generate_series(0, $4::int - 1) s
     ON CONFLICT (id) DO NOTHING`,
    [from, shape.accounts, shape.from, shape.endpointsPerAccount],
  );
}

/** Where event n goes: SQL of its Account's index and of its cursor in that Account's stream, given SQL of n. */
export interface Layout {
  accountOf(n: string): string;
  cursorOf(n: string): string;
  /** SQL of Account a's last cursor once events [0, events) are written, given SQL of a. */
  headOf(a: string, events: number): string;
}

/** The skewed turns of the file's comment: run lengths per Account, where each run starts in a period, the Account at each position. */
export function skewedLayout(accounts: number): Layout {
  const w = Array.from({ length: accounts }, (_, a) =>
    Math.max(1, Math.round(6 * accounts * (Math.cbrt((a + 1) / accounts) - Math.cbrt(a / accounts)))),
  );
  const lo = w.map((_, a) => w.slice(0, a).reduce((x, y) => x + y, 0));
  const period = lo[accounts - 1]! + w[accounts - 1]!;
  const at = w.flatMap((k, a) => Array<number>(k).fill(a));
  const arr = (xs: number[]) => `'{${xs.join(',')}}'::int[]`;
  const [W, LO, AT] = [arr(w), arr(lo), arr(at)];
  return {
    accountOf: (n) => `(${AT})[((${n}) % ${period})::int + 1]`,
    cursorOf: (n) => {
      const a = `(${AT})[((${n}) % ${period})::int + 1] + 1`;
      return `((${n}) / ${period}) * (${W})[${a}] + ((${n}) % ${period}) - (${LO})[${a}] + 1`;
    },
    headOf: (a, events) =>
      `${Math.floor(events / period)} * (${W})[(${a}) + 1] + least(greatest(${events % period} - (${LO})[(${a}) + 1], 0), (${W})[(${a}) + 1])`,
  };
}

/** Every event in one Account, after `cursorBase`. */
export function oneAccountLayout(account: number, cursorBase: number): Layout {
  return {
    accountOf: () => String(account),
    cursorOf: (n) => `${cursorBase} + (${n}) + 1`,
    headOf: (_a, events) => String(cursorBase + events),
  };
}

/** What one part of the fill writes: events [n0, n1) of `events`, and their deliveries, in a stream of its own tag. */
export interface FillPart {
  tag: string;
  events: number;
  deliveries: number;
  n0: number;
  n1: number;
  layout: Layout;
  /** Every event of the part names this contact (contact_refs), for a contact deletion. */
  contactRef?: string;
}

const timeOf = (shape: FillShape, events: number, n: string) =>
  `('${shape.from.toISOString()}'::timestamptz + (${(shape.to.getTime() - shape.from.getTime()) / 1000}::float8 * (${n}) / ${events}) * interval '1 second')`;

/** The rows of one part, written in chunks of about `chunk` events; `progress` after each table's chunk, with the seconds it took. */
export async function fillPart(
  db: Db,
  shape: FillShape,
  part: FillPart,
  payload: object,
  chunk: number,
  progress: (table: string, rows: number, seconds: number) => void,
): Promise<void> {
  const eventCols = await columnsOf(db, 'events');
  const streamData = eventCols.get('stream_data');
  const withStreamData = streamData !== undefined && !streamData.nullable && !streamData.hasDefault;
  // The payload as a jsonb `data` column, or (migration 0031) once, in `payload` as the service
  // stores it (src/db/payload-bytes.ts: compressed when that is shorter, as a ~1 KiB payload is): the
  // same bytes for every event of the fill, which only the stream pages read. JSON text per row,
  // with the event's own entity id, was what migration 0031 leaves of older rows, and stream pages
  // read those another way (parsed and written again).
  const evColumns: [string, string][] = [
    ['id', eventIdSql(part.tag, 'n')],
    ['account_id', accountIdSql('ev.acct')],
    ['environment', `'live'`],
    ['cursor', part.layout.cursorOf('n')],
    ['type', `'crm.demand.created'`],
    ['idempotency_key', `'crm:demand:${part.tag}_' || n || ':1'`],
    ['contact_refs', part.contactRef ? `ARRAY['${part.contactRef}']::text[]` : `'{}'::text[]`],
    ['occurred_at', 'ev.t'],
    ['created_at', 'ev.t'],
  ];
  if (eventCols.has('data')) evColumns.push(['data', 'p.d']);
  if (eventCols.has('payload')) evColumns.push(['payload', '$4::bytea']);
  if (withStreamData) evColumns.push(['stream_data', 'p.d']);
  const evNames = evColumns.map(([c]) => c);
  checkCovered('events', eventCols, evNames);
  const attemptCols = await columnsOf(db, 'delivery_attempts');
  const withDeliveryCreatedAt = attemptCols.has('delivery_created_at');
  const atNames = ['delivery_id', 'number', 'started_at', 'duration_ms', 'response_code', 'error'];
  if (withDeliveryCreatedAt) atNames.push('delivery_created_at');
  checkCovered('delivery_attempts', attemptCols, atNames);
  const dlNames = [
    'id',
    'account_id',
    'endpoint_id',
    'event_id',
    'event_type',
    'idempotency_key',
    'environment',
    'status',
    'attempts',
    'response_code',
    'last_attempt_at',
    'created_at',
    'updated_at',
  ];
  checkCovered('deliveries', await columnsOf(db, 'deliveries'), dlNames);

  const E = part.events;
  const D = part.deliveries;
  const slots = shape.endpointsPerAccount;
  // Event n's Account and time, and delivery j's event, outcome and attempts.
  const ofEvent = `LATERAL (SELECT ${part.layout.accountOf('n')} AS acct, ${timeOf(shape, E, 'n')} AS t) ev`;
  const ofDelivery = `LATERAL (SELECT (j * ${E}::bigint) / ${D} AS n, (j * 40503) % 1000 AS g) dj,
    LATERAL (SELECT CASE WHEN dj.g < 960 THEN 1 WHEN dj.g < 990 THEN 2 ELSE 6 END AS natt) na,
    LATERAL (SELECT ${part.layout.accountOf('dj.n')} AS acct, ${timeOf(shape, E, 'dj.n')} AS t) ev`;

  for (let n0 = part.n0; n0 < part.n1; n0 += chunk) {
    const n1 = Math.min(part.n1, n0 + chunk);
    let t0 = performance.now();
    const took = () => {
      const s = (performance.now() - t0) / 1000;
      t0 = performance.now();
      return s;
    };
    const ev = await db.query(
      `INSERT INTO events (${evNames.join(', ')})
       SELECT ${evColumns.map(([, v]) => v).join(', ')}
       FROM generate_series($1::bigint, $2::bigint - 1) n, ${ofEvent},
            LATERAL (SELECT jsonb_set(jsonb_set($3::jsonb, '{entity_id}', to_jsonb('${part.tag}_' || n)), '{after_data,id}', to_jsonb('${part.tag}_' || n)) AS d) p`,
      [n0, n1, JSON.stringify(payload), ...(eventCols.has('payload') ? [encodePayload(payload as Record<string, unknown>)] : [])],
    );
    progress('events', ev.rowCount ?? 0, took());
    // Deliveries of events [n0, n1): j from ⌈n0·D/E⌉ to ⌈n1·D/E⌉.
    const j0 = Math.ceil((n0 * D) / E);
    const j1 = Math.ceil((n1 * D) / E);
    const dl = await db.query(
      `INSERT INTO deliveries (${dlNames.join(', ')})
       SELECT ${deliveryIdSql(part.tag, 'j')}, ${accountIdSql('ev.acct')}, ${endpointIdSql('ev.acct', `j % ${slots}`)}, ${eventIdSql(part.tag, 'dj.n')},
              'crm.demand.created', 'crm:demand:${part.tag}_' || dj.n || ':1', 'live',
              CASE WHEN na.natt = 6 THEN 'exhausted' ELSE 'success' END, na.natt, CASE WHEN na.natt = 6 THEN 503 ELSE 200 END,
              ev.t + (na.natt - 1) * interval '30 seconds', ev.t, ev.t + (na.natt - 1) * interval '30 seconds'
       FROM generate_series($1::bigint, $2::bigint - 1) j, ${ofDelivery}`,
      [j0, j1],
    );
    progress('deliveries', dl.rowCount ?? 0, took());
    const at = await db.query(
      `INSERT INTO delivery_attempts (${atNames.join(', ')})
       SELECT ${deliveryIdSql(part.tag, 'j')}, a, ev.t + (a - 1) * interval '30 seconds', 20 + (j % 50)::int,
              CASE WHEN a < na.natt OR na.natt = 6 THEN 503 ELSE 200 END, CASE WHEN a < na.natt OR na.natt = 6 THEN 'non_2xx' END
              ${withDeliveryCreatedAt ? ', ev.t' : ''}
       FROM generate_series($1::bigint, $2::bigint - 1) j, ${ofDelivery}, generate_series(1, na.natt) a`,
      [j0, j1],
    );
    progress('delivery_attempts', at.rowCount ?? 0, took());
  }
}

/** Stream heads of Accounts [from, to) once events [0, events) of `layout` are written, so that a publish appends after the history. */
export async function setStreamHeads(db: Db, layout: Layout, from: number, to: number, events: number): Promise<void> {
  await db.query(
    `INSERT INTO stream_heads (account_id, environment, last_cursor)
     SELECT ${accountIdSql('a')}, 'live', ${layout.headOf('a', events)} FROM generate_series($1::int, $2::int - 1) a
     ON CONFLICT (account_id, environment) DO UPDATE SET last_cursor = greatest(stream_heads.last_cursor, excluded.last_cursor)`,
    [from, to],
  );
}

/** Account `account`'s last cursor (0 when it has no stream yet). */
export async function streamHead(db: Db, account: number): Promise<number> {
  const { rows } = await db.query<{ c: string }>(
    `SELECT coalesce((SELECT last_cursor FROM stream_heads WHERE account_id = ${accountIdSql('$1::int')} AND environment = 'live'), 0) AS c`,
    [account],
  );
  return Number(rows[0]!.c);
}

/** A contact of Account `account` (a chatapp channel account of its own), to be deleted with its events. */
export async function makeContact(db: Db, account: number): Promise<string> {
  const { accountId } = await fillIds(db, account);
  const { rows } = await db.query<{ id: string }>(
    `WITH ca AS (INSERT INTO channel_accounts (account_id, channel, display, environment) VALUES ($1, 'chatapp', 'scale', 'live') RETURNING id)
     INSERT INTO contacts (account_id, channel_account_id, wa_id) SELECT $1, ca.id, '15550001' FROM ca RETURNING id`,
    [accountId],
  );
  return rows[0]!.id;
}

/**
 * Fills the per-endpoint hourly rollup (the table the stats route reads, migration 0030) from the
 * filled deliveries, when there is one: a table named like a rollup with an endpoint and an hour.
 * Its columns are mapped by name (account, endpoint, the hour, successes, failures, attempts,
 * deliveries); a required column it cannot map is said, and the rollup left empty.
 */
export async function fillRollups(db: Db, accounts: number): Promise<string> {
  const { rows: tables } = await db.query<{ table_name: string }>(
    `SELECT t.table_name FROM information_schema.tables t
     WHERE t.table_schema = current_schema() AND t.table_name ~ '(rollup|hourly|stats)' AND t.table_type = 'BASE TABLE'
       AND EXISTS (SELECT 1 FROM information_schema.columns c WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'endpoint_id')
     ORDER BY t.table_name`,
  );
  if (tables.length === 0) return 'no rollup table: the stats route reads the deliveries';
  const said: string[] = [];
  for (const { table_name: table } of tables) {
    const { rows: cols } = await db.query<{ column_name: string; data_type: string; is_nullable: string; column_default: string | null }>(
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`,
      [table],
    );
    const success = `count(*) FILTER (WHERE d.status = 'success')`;
    const mapped: [string, string, boolean][] = []; // column, expression, grouped by
    const unknown: string[] = [];
    for (const c of cols) {
      const name = c.column_name;
      if (name === 'account_id') mapped.push([name, 'd.account_id', true]);
      else if (name === 'endpoint_id') mapped.push([name, 'd.endpoint_id', true]);
      else if (c.data_type.startsWith('timestamp') && /hour|bucket|period|start|at$/.test(name) && !/updated|created/.test(name))
        mapped.push([name, `date_trunc('hour', d.created_at, 'UTC')`, true]);
      else if (/exhausted|limited/.test(name))
        mapped.push([name, `count(*) FILTER (WHERE d.status = '${/exhausted/.test(name) ? 'exhausted' : 'limited'}')`, false]);
      else if (/succe/.test(name)) mapped.push([name, success, false]);
      else if (/fail|error/.test(name)) mapped.push([name, `sum(d.attempts) - ${success}`, false]);
      // The fill's attempts last 20 to 69 ms, 44.5 on average.
      else if (/_ms|duration/.test(name)) mapped.push([name, 'round(sum(d.attempts) * 44.5)', false]);
      else if (/attempt/.test(name)) mapped.push([name, 'sum(d.attempts)', false]);
      else if (/deliver|total|count/.test(name)) mapped.push([name, 'count(*)', false]);
      else if (c.is_nullable === 'NO' && c.column_default === null) unknown.push(name);
    }
    const hasHour = mapped.some(([, e]) => e.startsWith('date_trunc'));
    const hasCount = mapped.some(([, , grouped]) => !grouped);
    if (unknown.length || !hasHour || !hasCount) {
      said.push(`${table}: left empty, cannot map ${unknown.join(', ') || 'its columns'}`);
      continue;
    }
    const t0 = performance.now();
    const grouped = mapped.filter(([, , g]) => g).map(([, e]) => e);
    const res = await db.query(
      `INSERT INTO ${table} (${mapped.map(([c]) => c).join(', ')})
       SELECT ${mapped.map(([, e]) => e).join(', ')} FROM deliveries d
       WHERE d.account_id IN (SELECT ${accountIdSql('a')} FROM generate_series(0, $1::int) a)
       GROUP BY ${grouped.join(', ')}
       ON CONFLICT DO NOTHING`,
      [accounts],
    );
    said.push(`${table}: ${res.rowCount} rows in ${((performance.now() - t0) / 1000).toFixed(1)} s (${mapped.map(([c]) => c).join(', ')})`);
  }
  return said.join('; ');
}
