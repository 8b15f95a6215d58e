/**
 * The benchmark at scale (issue #24): the production shape (bench/production-phase.ts's
 * startShapeBench: Temporal server on Postgres, compiled API and worker processes, the bench's
 * verifying receiver) measured on an empty database, then again once its Postgres holds a history
 * synthesised in SQL (bench/scale-fill.ts), in the same run; end to end on the full database
 * alternates, round by round, with a twin shape that stays empty. Not a test: nothing here is
 * timed by `npm test`.
 *
 *   npm run bench:scale                                         # 20 M deliveries, 10 M events: hours
 *   npm run bench:scale -- --deliveries=2000000 --events=1000000 --churn-minutes=2   # a quick run
 *
 * Flags (defaults): --deliveries=20000000 --events=10000000 --accounts=1000 --endpoints=5000
 * --days=35 --steps=2 (read figures after each step of the fill: the trend) --reads=200
 * --page-limit=20 --depth=1000 (pages) --e2e-events=4000 --e2e-rounds=3 (rounds per side, the full
 * and the twin alternating; each side's figure is its median round, the range beside it)
 * --churn-minutes=10 --chunk=250000 (events per fill statement) --api-processes=2
 * --worker-processes=2 --no-vacuum (skip VACUUM after a step)
 * --statements (pg_stat_statements: each end-to-end round's statements, with their block reads).
 *
 * Measured, beside the same figures on the empty database: end to end to 1 and to 100 endpoints
 * (16 publishers); the audit list (GET /api/v1/webhook_deliveries, by endpoint and by status, its
 * first page and a page `depth` pages deep through the route's own cursors); stats
 * (GET /api/v1/webhooks/{id}/stats); a stream page (GET /api/v1/events) at the head and in the
 * middle, at its largest (100) and its default size (20); GET /healthz, the floor any read pays
 * over HTTP on the machine; deleting a contact with 10,000 events (DELETE /api/v1/contacts/{id})
 * while another tenant publishes; dropping the oldest weekly partition while publishing (when the
 * tables are partitioned, by the product's retention, each statement timed); then a churn at full
 * rate with the tables' and the written week's dead rows, sizes and autovacuums each minute.
 *
 * Measured after waits (bench/scale-quiet.ts), so the figures are the data's and not the previous
 * phase's: the reads on an idle shape (nothing owed, no other statement, load down; ≤ 60 s), one
 * at a time after a warm-up of each; end to end after the fill: a CHECKPOINT and the kernel's
 * writeback of the fill (≤ 5 min), then the empty twin started (its own Postgres, Temporal and
 * processes, its tenants made the same way), a warm-up round on each and both idle, then their
 * rounds in turn, the order swapped each round; the twin is stopped before the rest. End to end
 * on one database half an hour before the other moved by more than the 10 % judged, in either
 * direction. What each waited is printed.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { issueApiKey } from '../src/db/api-keys.js';
import { SCOPES } from '../src/security/api-key.js';
import { decodePageKey, DEFAULT_LIMIT, encodePageKey } from '../src/core/paging.js';
import { endpointPacing, listDeliveries, type DeliveryFilter } from '../src/db/deliveries.js';
import { endpointHourlyStats } from '../src/db/endpoint-hourly-stats.js';
import { readStream } from '../src/db/events.js';
import type { Queryable } from '../src/db/pool.js';
import { projectRoot } from '../dev/tools.js';
import { demandData } from './demand-events.js';
import { ensureBuilt, startShapeBench, type ShapeBench, type Tenant } from './production-phase.js';
import {
  bulkSession,
  ensureWeeklyPartitions,
  fillAccounts,
  fillIds,
  fillPart,
  fillRollups,
  isPartitioned,
  makeContact,
  partitionsOf,
  oneAccountLayout,
  setStreamHeads,
  skewedLayout,
  streamHead,
  uuidOfSql,
  type FillShape,
} from './scale-fill.js';
import { statementMs } from './read-statement-time.js';
import { startReadTimer, type ReadTimer } from './read-timer.js';
import { printColumns } from './table.js';
import { GROWING_TABLES, mib, partitionGrowthAt, tableGrowth, type PartitionGrowth, type TableGrowth } from './table-growth.js';
import { idleWaitLine, settleWrites, waitForIdleShape, writesSettledLine, type IdleWait, type WritesSettled } from './scale-quiet.js';
import { dropStepLines, timedRetentionDrop, type RetentionDrop } from './scale-retention-drop.js';
import { ioDelta, ioLine, ioSnapshot, type IoByBackend } from './scale-io.js';
import { pct } from './percentile.js';

const argv = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const v = argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  return v !== undefined && Number(v) >= 0 ? Number(v) : fallback;
};
const opt = {
  deliveries: flag('deliveries', 20_000_000),
  events: flag('events', 10_000_000),
  accounts: flag('accounts', 1_000),
  endpoints: flag('endpoints', 5_000),
  days: flag('days', 35),
  steps: Math.max(1, flag('steps', 2)),
  reads: flag('reads', 200),
  pageLimit: flag('page-limit', 20),
  depth: flag('depth', 1_000),
  e2eEvents: flag('e2e-events', 4_000),
  /** Rounds of end to end on each database, 1 and 100 endpoints in turn: a side's figure is its median round. */
  e2eRounds: Math.max(1, flag('e2e-rounds', 3)),
  churnMinutes: flag('churn-minutes', 10),
  chunk: flag('chunk', 250_000),
  apiProcesses: flag('api-processes', 2),
  workerProcesses: flag('worker-processes', 2),
  vacuum: !argv.includes('--no-vacuum'),
  /** Loads pg_stat_statements (and track_io_timing): each end-to-end phase's statements in .data/bench-scale/statements.txt. */
  statements: argv.includes('--statements'),
};
/** Bytes on disk per row, heap, TOAST and indexes (measured by a small run of this bench; see docs/scaling.md), for the disk check. */
const BYTES_PER = { event: 2_800, delivery: 500, attempt: 125 };
const ATTEMPTS_PER_DELIVERY = 0.96 + 0.03 * 2 + 0.01 * 6;
const CONTACT_EVENTS = 10_000;
const MANY = 100;
const dir = path.join(projectRoot, '.data', 'bench-scale');

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
const step = (what: string) => console.error(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${what}`);
const n = (x: number) => Math.round(x).toLocaleString('en-US');
const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(x < 10 ? 2 : 1)} ms` : 'n/a');
const times = (x: number, digits = 2) => (Number.isFinite(x) ? `${x.toFixed(digits)}×` : 'n/a');

const stops: (() => Promise<unknown>)[] = [];
const stopAll = async () => {
  for (const fn of stops.splice(0).reverse()) await fn().catch((err) => console.error(`stopping: ${(err as Error).message}`));
};
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    console.error(`\n${signal}: stopping everything`);
    void stopAll().finally(() => process.exit(130));
  });

interface Latency {
  p50: number;
  p99: number;
  n: number;
  /** Reads: the SQL of one of them on the server (planning + execution, bench/read-statement-time.ts). */
  sqlMs?: number;
}
const latencyOf = (xs: number[]): Latency => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: pct(s, 50), p99: pct(s, 99), n: s.length };
};
const middle = (xs: number[]) => latencyOf(xs).p50;

/** The median rate and the median p99 of `rounds`, the CPU and reads of the round of median rate, and every round's rate and p99. */
function medianRound(rounds: E2E[]): E2E {
  const perSecond = middle(rounds.map((r) => r.perSecond));
  const mid = rounds.find((r) => r.perSecond === perSecond)!;
  const all = rounds.map((r) => ({ perSecond: r.perSecond, p99: r.p99 }));
  return { perSecond, p99: middle(rounds.map((r) => r.p99)), cpuMsPerDelivery: mid.cpuMsPerDelivery, io: mid.io, rounds: all };
}

interface E2E {
  perSecond: number;
  p99: number;
  /** CPU ms per delivery: api, worker, postgres, temporal and their total. */
  cpuMsPerDelivery: Record<string, number>;
  /** Postgres's block reads during it, by kind of backend (bench/scale-io.ts). */
  io: IoByBackend[];
  /** Every round's rate and p99 when the figure is the median of several (`--e2e-rounds`). */
  rounds?: { perSecond: number; p99: number }[];
}
interface Reads {
  auditEndpointFirst: Latency;
  auditEndpointDeep: Latency & { page: number };
  auditStatusFirst: Latency;
  auditStatusDeep: Latency & { page: number };
  stats: Latency;
  streamHead: Latency;
  streamMiddle: Latency;
  /** The stream's default page (20 items, no `limit`). */
  streamDefaultHead: Latency;
  streamDefaultMiddle: Latency;
  /** GET /healthz: one trivial statement and Temporal's health check; what any read costs over HTTP on this machine. */
  floor: Latency;
}
interface During {
  actionMs: number;
  before: Latency;
  during: Latency;
  note: string;
}

/** Whom the reads are made as: an Account's key, its busiest endpoint. */
interface ReadTarget {
  key: string;
  accountId: string;
  endpointId: string;
}

async function main() {
  fs.mkdirSync(dir, { recursive: true });
  const loadBefore = os.loadavg();
  const build = ensureBuilt(step);
  const plan = fitToDisk();
  const { shape, db, api, receiver, bench } = await startShapeBench({
    dir,
    step,
    apiProcesses: opt.apiProcesses,
    workerProcesses: opt.workerProcesses,
    endpointLimit: MANY + 10,
    stops,
    statements: opt.statements,
  });
  const reader = await startReadTimer(shape.apiUrl);
  stops.push(() => reader.stop());
  const to = new Date();
  const fillShape: FillShape = {
    accounts: opt.accounts,
    endpointsPerAccount: Math.max(1, Math.floor(opt.endpoints / opt.accounts)),
    from: new Date(to.getTime() - opt.days * 86_400_000),
    to,
  };
  const partitioned = (await isPartitioned(db, 'deliveries')) && (await isPartitioned(db, 'delivery_attempts'));
  if (partitioned) {
    const until = new Date(to.getTime() + 14 * 86_400_000);
    const made = await ensureWeeklyPartitions(db, fillShape.from, until);
    step(`partitioned tables, for the fill: ${made.join(', ') || 'every week there already'}`);
  } else step('deliveries and delivery_attempts are not partitioned: the partition drop is skipped');

  step(`creating tenants: 1 + ${MANY} endpoints, verified through the API`);
  const [single, many] = await Promise.all([bench.tenant('single', 1), bench.tenant('many', MANY)]);
  /** One unmeasured round of publishing to a shape's two tenants: connections, plans and code warm. */
  const warmUp = async (b: ShapeBench, one: Tenant, hundred: Tenant, tag: string) => {
    await b.publish(one, `${tag}1`, opt.e2eEvents, 30);
    await b.publish(hundred, `${tag}N`, opt.e2eEvents, 30);
  };
  step('warming up');
  await warmUp(bench, single, many, 'warm');

  // ---- the empty database
  /** A shape and its tenants, as end to end measures it. */
  interface Side {
    tag: 'empty' | 'full';
    bench: ShapeBench;
    db: pg.Pool;
    single: Tenant;
    many: Tenant;
  }
  /** One closed-loop round to `t`, with each component's CPU and Postgres's block reads during it. */
  const e2eRound = async (side: Side, t: Tenant, tag: string, name: string): Promise<E2E> => {
    const io0 = await ioSnapshot(side.db);
    const r = await side.bench.phase(name, () => side.bench.publish(t, tag, opt.e2eEvents, 20));
    const io = ioDelta(io0, await ioSnapshot(side.db));
    const cpu = r.cpuMsPerDelivery;
    step(
      `  ${n(r.perSecond)}/s, p99 ${ms(r.latencyMs.p99)}; CPU ms per delivery ${Object.entries(cpu)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    step(`  Postgres reads: ${ioLine(io, r.events) || 'none from outside shared_buffers'}`);
    return { perSecond: r.perSecond, p99: r.latencyMs.p99, cpuMsPerDelivery: cpu, io };
  };
  /**
   * `--e2e-rounds` rounds on each side, alternating: a round to 1 endpoint on each, then to 100 on
   * each, the full side first in odd rounds and second in even ones. One round moves by more than
   * the 10 % judged, and the machine drifts over minutes; alternating rounds meet the same drift.
   */
  const alternatingE2E = async (sides: [Side, Side]) => {
    const results: Record<Side['tag'], { ones: E2E[]; hundreds: E2E[] }> = {
      empty: { ones: [], hundreds: [] },
      full: { ones: [], hundreds: [] },
    };
    for (let i = 1; i <= opt.e2eRounds; i++) {
      const order = i % 2 ? sides : ([sides[1], sides[0]] as const);
      const of = opt.e2eRounds > 1 ? ` (round ${i} of ${opt.e2eRounds})` : '';
      for (const [many, pick] of [
        [false, 'ones'],
        [true, 'hundreds'],
      ] as const)
        for (const side of order) {
          const what = many ? `${MANY} endpoints` : '1 endpoint';
          step(`${side.tag}: end to end, ${what}${of}`);
          const tag = `${side.tag}${many ? 'N' : '1'}r${i}`;
          results[side.tag][pick].push(await e2eRound(side, many ? side.many : side.single, tag, `${side.tag}, ${what}${of}`));
          await sleep(1_000);
        }
    }
    const medians = (r: { ones: E2E[]; hundreds: E2E[] }) => ({ one: medianRound(r.ones), hundred: medianRound(r.hundreds) });
    return { empty: medians(results.empty), full: medians(results.full) };
  };
  const emptyReadsWait = await idleBeforeReads('empty');
  step('empty: reads (audit list, stats, stream), one at a time');
  const emptyReads = await measureReads(db, reader, { key: single.key, accountId: single.accountId, endpointId: single.endpointIds[0]! });
  const fillDb = await db.connect();
  stops.push(async () => fillDb.release());
  const { triggersOff } = await bulkSession(fillDb);
  const payload = randomPayload();
  // A contact of an Account of its own (index `accounts`), with 10,000 events spread over the span.
  await fillAccounts(fillDb, { ...fillShape, accounts: opt.accounts + 1 }, opt.accounts);
  step('empty: deleting a contact with 10,000 events while another tenant publishes');
  const emptyContact = await contactDeletion(opt.accounts, 'ce');

  // ---- the fill, in steps; the reads after each
  step(
    `filling ${n(plan.deliveries)} deliveries and ${n(plan.events)} events over ${opt.accounts} Accounts, ` +
      `${opt.accounts * fillShape.endpointsPerAccount} endpoints, ${opt.days} days, in ${opt.steps} step(s)` +
      (triggersOff ? '' : ' (could not turn triggers off: slower)'),
  );
  const fill = {
    seconds: 0,
    vacuumSeconds: 0,
    rollups: '',
    rows: { events: 0, deliveries: 0, delivery_attempts: 0 } as Record<string, number>,
    secondsPerTable: { events: 0, deliveries: 0, delivery_attempts: 0 } as Record<string, number>,
  };
  const t0 = now();
  await fillAccounts(fillDb, fillShape);
  fill.seconds += (now() - t0) / 1000;
  const stepReads: {
    events: number;
    deliveries: number;
    reads: Reads;
    growth: TableGrowth[];
    writesWait: WritesSettled;
    readsWait: IdleWait;
  }[] = [];
  const target = await bigAccountTarget();
  const layout = skewedLayout(opt.accounts);
  for (let s = 1; s <= opt.steps; s++) {
    const n0 = Math.floor((plan.events * (s - 1)) / opt.steps);
    const n1 = Math.floor((plan.events * s) / opt.steps);
    const stepStart = now();
    let lastSay = 0;
    await fillPart(
      fillDb,
      fillShape,
      { tag: 'f', events: plan.events, deliveries: plan.deliveries, n0, n1, layout },
      payload,
      opt.chunk,
      (table, rows, seconds) => {
        fill.rows[table] = (fill.rows[table] ?? 0) + rows;
        fill.secondsPerTable[table] = (fill.secondsPerTable[table] ?? 0) + seconds;
        if (table === 'delivery_attempts' && now() - lastSay > 10_000) {
          lastSay = now();
          const secs = Object.values(fill.secondsPerTable).reduce((a, b) => a + b, 0);
          step(
            `  filled ${n(fill.rows.events!)} events, ${n(fill.rows.deliveries!)} deliveries, ${n(fill.rows.delivery_attempts!)} attempts ` +
              `(${n((fill.rows.events! + fill.rows.deliveries! + fill.rows.delivery_attempts!) / secs)} rows/s)`,
          );
        }
      },
    );
    await setStreamHeads(fillDb, layout, 0, opt.accounts, n1);
    fill.rollups = await fillRollups(fillDb, opt.accounts);
    fill.seconds += (now() - stepStart) / 1000;
    const v0 = now();
    step(`  step ${s}: ${opt.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} of the filled tables`);
    await fillDb.query(`${opt.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} ${GROWING_TABLES.join(', ')}`);
    fill.vacuumSeconds += (now() - v0) / 1000;
    const writesWait = await writesOnDisk(`step ${s}`);
    const readsWait = await idleBeforeReads(`step ${s}`);
    step(`step ${s} of ${opt.steps}: ${n(fill.rows.deliveries!)} deliveries filled; reads, one at a time`);
    stepReads.push({
      events: fill.rows.events!,
      deliveries: fill.rows.deliveries!,
      reads: await measureReads(db, reader, target),
      growth: await tableGrowth(db),
      writesWait,
      readsWait,
    });
  }

  // ---- the full database beside an empty twin: the fill's writes on disk and both shapes warm before end to end
  const fullWritesWait = await writesOnDisk('full');
  step('empty twin: a second production shape of its own (Postgres, Temporal, processes), for end to end beside the full one');
  const twinStops: (() => Promise<unknown>)[] = [];
  const stopTwin = async () => {
    for (const fn of twinStops.splice(0).reverse()) await fn();
  };
  stops.push(stopTwin);
  const twin = await startShapeBench({
    dir: path.join(dir, 'empty-twin'),
    step: (what) => step(`  twin: ${what.trim()}`),
    apiProcesses: opt.apiProcesses,
    workerProcesses: opt.workerProcesses,
    endpointLimit: MANY + 10,
    stops: twinStops,
    statements: opt.statements,
  });
  const [twinSingle, twinMany] = await Promise.all([twin.bench.tenant('single', 1), twin.bench.tenant('many', MANY)]);
  step('full and empty twin: warming up (not measured)');
  const w0 = now();
  await warmUp(bench, single, many, 'rewarm');
  await warmUp(twin.bench, twinSingle, twinMany, 'warm');
  const warmSeconds = (now() - w0) / 1000;
  // The warm-ups' sessions ended first, or the 100-endpoint round would start while they end and
  // hand its first deliveries to the workflows (0.61× the empty rate once).
  step('full and empty twin: waiting for idle shapes before end to end (no session open; load ≤ 0.5 per CPU; ≤ 60 s each)');
  const fullE2EWait = await waitForIdleShape(db);
  const emptyE2EWait = await waitForIdleShape(twin.db);
  step(`  waited ${idleWaitLine(fullE2EWait)}; twin ${idleWaitLine(emptyE2EWait)}`);
  const { empty: emptyE2E, full: fullE2E } = await alternatingE2E([
    { tag: 'full', bench, db, single, many },
    { tag: 'empty', bench: twin.bench, db: twin.db, single: twinSingle, many: twinMany },
  ]);
  step('empty twin: stopping it');
  await stopTwin();
  step('full: deleting a contact with 10,000 events (in the largest Account) while another tenant publishes');
  const fullContact = await contactDeletion(0, 'cf');
  const drop = partitioned ? await partitionDrop() : undefined;
  step(`full: churn at full rate for ${opt.churnMinutes} minute(s)`);
  const churn = opt.churnMinutes > 0 ? await churnAtFullRate(opt.churnMinutes) : undefined;
  const loadAfter = os.loadavg();

  // ---- the table
  await stopAll();
  printResults();
  return;

  function fitToDisk() {
    const need = (e: number, d: number) =>
      (e * BYTES_PER.event + d * (BYTES_PER.delivery + ATTEMPTS_PER_DELIVERY * BYTES_PER.attempt)) * 1.2;
    const st = fs.statfsSync(dir);
    const free = st.bavail * st.bsize;
    const room = free - 8 * 2 ** 30; // room for the shape, Temporal and the other work on the machine
    const wanted = need(opt.events, opt.deliveries);
    if (wanted <= room) {
      step(`disk: ${(wanted / 2 ** 30).toFixed(1)} GiB needed by estimate, ${(free / 2 ** 30).toFixed(1)} GiB free`);
      return { events: opt.events, deliveries: opt.deliveries, scaled: false };
    }
    const f = Math.max(0, room) / wanted;
    const plan = { events: Math.floor(opt.events * f), deliveries: Math.floor(opt.deliveries * f), scaled: true };
    step(
      `disk: ${(wanted / 2 ** 30).toFixed(1)} GiB needed by estimate, ${(free / 2 ** 30).toFixed(1)} GiB free: ` +
        `filling ${n(plan.deliveries)} deliveries and ${n(plan.events)} events instead (the most that fits)`,
    );
    return plan;
  }

  /** Waits for an idle shape before a read phase (bench/scale-quiet.ts) and says what it waited for. */
  async function idleBeforeReads(tag: string): Promise<IdleWait> {
    step(
      `${tag}: waiting for an idle shape before the reads (nothing owed, no other statement, no session open, load ≤ 0.5 per CPU; ≤ 60 s)`,
    );
    const w = await waitForIdleShape(db);
    step(`  waited ${idleWaitLine(w)}`);
    return w;
  }

  /** CHECKPOINT and the kernel's writeback of what the fill wrote (bench/scale-quiet.ts), said as it ends. */
  async function writesOnDisk(tag: string): Promise<WritesSettled> {
    step(`${tag}: CHECKPOINT, then waiting for the kernel's dirty + writeback pages below 64 MiB (≤ 5 min)`);
    const w = await settleWrites(db);
    step(`  ${writesSettledLine(w)}`);
    return w;
  }

  /** Account 0 (the largest of the fill): a key for it, and its busiest endpoint. */
  async function bigAccountTarget(): Promise<ReadTarget> {
    const { accountId, endpointId } = await fillIds(db, 0, 0);
    const { key } = await issueApiKey(db, { accountId, environment: 'live', scopes: [...SCOPES] });
    return { key, accountId, endpointId };
  }

  /** A contact with 10,000 events (2 deliveries each, over the span) in Account `account`, deleted through the API while `single` publishes. */
  async function contactDeletion(account: number, tag: string): Promise<During & { left: string }> {
    const contactId = await makeContact(fillDb, account);
    const contactLayout = oneAccountLayout(account, await streamHead(fillDb, account));
    await fillPart(
      fillDb,
      fillShape,
      {
        tag,
        events: CONTACT_EVENTS,
        deliveries: 2 * CONTACT_EVENTS,
        n0: 0,
        n1: CONTACT_EVENTS,
        layout: contactLayout,
        contactRef: contactId,
      },
      payload,
      CONTACT_EVENTS,
      () => {},
    );
    await setStreamHeads(fillDb, contactLayout, account, account + 1, CONTACT_EVENTS);
    const { accountId } = await fillIds(db, account);
    const { key } = await issueApiKey(db, { accountId, environment: 'live', scopes: [...SCOPES] });
    const result = await during(bench, single, tag, async () => {
      const res = await api('DELETE', `/api/v1/contacts/${contactId}`, key);
      if (res.status !== 204) throw new Error(`contact deletion answered ${res.status} ${JSON.stringify(res.body)}`);
    });
    const { rows } = await db.query<{ events: number; deliveries: number; attempts: number }>(
      `SELECT (SELECT count(*) FROM events WHERE account_id = $1 AND contact_refs @> ARRAY[$2::text])::int AS events,
              (SELECT count(*) FROM deliveries WHERE account_id = $1 AND event_id IN (SELECT ${uuidOfSql(`$3::text || ':e:' || g`)} FROM generate_series(0, $4 - 1) g))::int AS deliveries,
              (SELECT count(*) FROM delivery_attempts WHERE delivery_id IN (SELECT ${uuidOfSql(`$3::text || ':d:' || g`)} FROM generate_series(0, $5 - 1) g))::int AS attempts`,
      [accountId, contactId, tag, CONTACT_EVENTS, 2 * CONTACT_EVENTS],
    );
    const left = `left: ${rows[0]!.events} events, ${rows[0]!.deliveries} deliveries, ${rows[0]!.attempts} attempts`;
    step(`  deleted in ${ms(result.actionMs)}; ${left}`);
    return { ...result, left };
  }

  /**
   * Drops the oldest weekly partition of delivery_attempts and of deliveries while `single`
   * publishes, by the product's retention (bench/scale-retention-drop.ts), each statement timed.
   */
  async function partitionDrop(): Promise<During & { what: string; retention: RetentionDrop }> {
    const oldest = (await partitionsOf(db, 'deliveries')).find((p) => p.from !== null && Number.isFinite(p.from))!;
    const rows = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${oldest.name}`);
    const day = (t: number) => new Date(t).toISOString().slice(0, 10);
    const what = `${oldest.name} (${n(rows.rows[0]!.n)} deliveries, ${day(oldest.from!)} to ${day(oldest.to!)}) and its attempts' week`;
    step(`full: dropping ${what} by the product's retention while another tenant publishes`);
    let retention: RetentionDrop | undefined;
    const result = await during(bench, single, 'drop', async () => {
      retention = await timedRetentionDrop(db, Date.now());
    });
    step(`  dropped ${retention!.dropped.join(', ')} in ${ms(result.actionMs)} (retention ${retention!.retentionDays} days)`);
    for (const line of dropStepLines(retention!)) step(`    ${line}`);
    return { ...result, what, retention: retention! };
  }

  async function churnAtFullRate(minutes: number) {
    const samples: { at: number; sent: number; growth: TableGrowth[]; hot: PartitionGrowth[] }[] = [];
    let sent: Map<string, number> | undefined;
    const t0 = now();
    // Arrivals at the receiver so far (of every phase: the figure is their difference from one minute to the next).
    const sample = async () =>
      samples.push({
        at: (now() - t0) / 1000,
        sent: receiver.arrivals.size,
        growth: await tableGrowth(db),
        hot: partitioned ? await partitionGrowthAt(db, Date.now()) : [],
      });
    await sample();
    const sending = bench.send(single, 'churn', Number.MAX_SAFE_INTEGER, minutes * 60).then((m) => (sent = m));
    for (let m = 1; m <= minutes; m++) {
      await sleep(Math.max(0, t0 + m * 60_000 - now()));
      await sample();
      const { growth, hot } = samples.at(-1)!;
      const d = growth.find((g) => g.table === 'deliveries')!;
      step(
        `  churn minute ${m}: deliveries ${n(d.liveRows)} live, ${n(d.deadRows)} dead, ${mib(d.heapBytes)} + ${mib(d.indexBytes)} of indexes` +
          hot.map((h) => `; ${hotLine(h)}`).join(''),
      );
    }
    await sending;
    const keys = [...sent!.keys()];
    await bench.allArrived(keys, 'churn');
    const lat = latencyOf(bench.latencies(sent!).map((l) => l.ms));
    let first = Infinity;
    let last = 0;
    for (const [k, at] of sent!) {
      first = Math.min(first, at);
      last = Math.max(last, receiver.arrivals.get(k)!);
    }
    return { deliveries: keys.length, perSecond: keys.length / ((last - first) / 1000), latency: lat, samples };
  }

  function printResults() {
    const last = stepReads.at(-1)!;
    console.log('');
    console.log(
      `Scale benchmark, production shape (${opt.apiProcesses} API + ${opt.workerProcesses} worker processes, Temporal server on Postgres; ${build}; ` +
        `Postgres ${shape.databaseUrl.replace(/\/\/[^@]*@/, '//')})`,
    );
    console.log(
      `History: ${n(fill.rows.deliveries!)} deliveries with ${n(fill.rows.delivery_attempts!)} attempts, ${n(fill.rows.events!)} events, ` +
        `${opt.accounts} Accounts, ${opt.accounts * fillShape.endpointsPerAccount} endpoints, ${opt.days} days` +
        (plan.scaled ? ` (scaled down to fit the disk from ${n(opt.deliveries)} / ${n(opt.events)})` : '') +
        `; deliveries ${partitioned ? 'partitioned by week' : 'not partitioned'}`,
    );
    const rowsFilled = fill.rows.events! + fill.rows.deliveries! + fill.rows.delivery_attempts!;
    console.log(
      `Fill: ${fill.seconds.toFixed(0)} s for ${n(rowsFilled)} rows (${n(rowsFilled / fill.seconds)} rows/s; deliveries ${n(fill.rows.deliveries! / fill.seconds)}/s ` +
        `with their events and attempts), then ${opt.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} ${fill.vacuumSeconds.toFixed(0)} s; rollups: ${fill.rollups}`,
    );
    console.log(
      `  per table: ${Object.entries(fill.secondsPerTable)
        .map(([t, s]) => `${t} ${n(fill.rows[t]! / s)} rows/s (${s.toFixed(0)} s)`)
        .join(', ')}`,
    );
    console.log('');
    const stepHeads = stepReads.map((s) => `${n(s.deliveries)} deliveries`);
    const rows: string[][] = [['figure', 'empty', ...stepHeads, 'full / empty', 'target']];
    const idle = (w: IdleWait) => `${w.seconds.toFixed(0)} s${w.settled ? '' : ' (bound)'}, load ${w.load[1].toFixed(2)}`;
    /** A median, with the rounds' range when there were several. */
    const ranged = (x: E2E, figure: 'perSecond' | 'p99', show: (v: number) => string, unit: string) => {
      const all = (x.rounds ?? []).map((r) => r[figure]);
      const range = all.length > 1 ? ` (${show(Math.min(...all))}–${show(Math.max(...all))}${unit})` : '';
      return `${show(x[figure])}${unit}${range}`;
    };
    const rate = (x: E2E) => ranged(x, 'perSecond', n, '/s');
    const p99 = (x: E2E) => ranged(x, 'p99', (v) => v.toFixed(1), ' ms');
    const e2eRow = (name: string, e: E2E, f: E2E) => {
      rows.push([
        `${name}: rate (median of rounds)`,
        rate(e),
        ...stepReads.map((_, i) => (i === stepReads.length - 1 ? rate(f) : '')),
        times(f.perSecond / e.perSecond, 3),
        'within 10 %',
      ]);
      rows.push([
        `  p99 publish → receipt (median of rounds)`,
        p99(e),
        ...stepReads.map((_, i) => (i === stepReads.length - 1 ? p99(f) : '')),
        times(f.p99 / e.p99),
        'within 10 %',
      ]);
      const cpu = (x: E2E) => ['api', 'worker', 'postgres', 'temporal'].map((k) => x.cpuMsPerDelivery[k]).join(' / ');
      rows.push([
        `  CPU ms per delivery, round of median rate: API / worker / Postgres / Temporal`,
        cpu(e),
        ...stepReads.map((_, i) => (i === stepReads.length - 1 ? cpu(f) : '')),
        times(f.cpuMsPerDelivery.total! / e.cpuMsPerDelivery.total!),
        'note',
      ]);
    };
    rows.push([
      '  before end to end: empty twin started after the fill, warm-up, idle; full: writes on disk, warm-up, idle',
      `twin; ${warmSeconds.toFixed(0)} s; idle ${idle(emptyE2EWait)}`,
      ...stepReads.map((_, i) =>
        i === stepReads.length - 1
          ? `${(fullWritesWait.checkpointSeconds + fullWritesWait.seconds).toFixed(0)} s${fullWritesWait.settled ? '' : ' (bound)'}, ` +
            `dirty ${fullWritesWait.dirtyMiB[0].toFixed(0)} → ${fullWritesWait.dirtyMiB[1].toFixed(0)} MiB; ${warmSeconds.toFixed(0)} s; ` +
            `idle ${idle(fullE2EWait)}`
          : '',
      ),
      '',
      'note',
    ]);
    e2eRow('end to end, 1 endpoint, 16 publishers', emptyE2E.one, fullE2E.one);
    e2eRow(`end to end, ${MANY} endpoints`, emptyE2E.hundred, fullE2E.hundred);
    const readRow = (name: string, pick: (r: Reads) => Latency & { page?: number }, target: string) => {
      const e = pick(emptyReads);
      const page = (l: Latency & { page?: number }) => (l.page !== undefined ? ` (page ${l.page})` : '');
      const cell = (l: Latency & { page?: number }) => `${ms(l.p50)} / ${ms(l.p99)}${page(l)}, SQL ${ms(l.sqlMs ?? NaN)}`;
      rows.push([name, cell(e), ...stepReads.map((s) => cell(pick(s.reads))), times(pick(last.reads).p99 / e.p99), target]);
    };
    rows.push([
      '  reads waited for an idle shape (then serial, warmed)',
      idle(emptyReadsWait),
      ...stepReads.map((s) => `${idle(s.readsWait)} (+ writes ${(s.writesWait.checkpointSeconds + s.writesWait.seconds).toFixed(0)} s)`),
      '',
      'note',
    ]);
    readRow(`audit list by endpoint, first page (${opt.pageLimit}): p50 / p99, SQL once`, (r) => r.auditEndpointFirst, '≤ 10 ms');
    readRow(`audit list by endpoint, ${opt.depth} pages deep: p50 / p99, SQL once`, (r) => r.auditEndpointDeep, '≤ 10 ms');
    readRow('audit list by status (exhausted), first page: p50 / p99, SQL once', (r) => r.auditStatusFirst, '≤ 10 ms');
    readRow(`audit list by status, ${opt.depth} pages deep: p50 / p99, SQL once`, (r) => r.auditStatusDeep, '≤ 10 ms');
    readRow('stats (24 hours of an endpoint): p50 / p99, SQL once', (r) => r.stats, '≤ 10 ms');
    readRow('stream page (100) at the head: p50 / p99, SQL once', (r) => r.streamHead, '≤ 5 ms');
    readRow('stream page (100) in the middle: p50 / p99, SQL once', (r) => r.streamMiddle, '≤ 5 ms');
    readRow('stream page (default, 20) at the head: p50 / p99, SQL once', (r) => r.streamDefaultHead, '≤ 5 ms');
    readRow('stream page (default, 20) in the middle: p50 / p99, SQL once', (r) => r.streamDefaultMiddle, '≤ 5 ms');
    readRow('  floor: GET /healthz (SELECT 1, Temporal health): p50 / p99', (r) => r.floor, 'note');
    const full = (v: string) => ['', ...stepReads.map((_, i) => (i === stepReads.length - 1 ? v : ''))];
    rows.push([
      `delete a contact with ${n(CONTACT_EVENTS)} events: time`,
      ms(emptyContact.actionMs),
      ...full(ms(fullContact.actionMs)).slice(1),
      times(fullContact.actionMs / emptyContact.actionMs),
      '≤ 2 s',
    ]);
    rows.push([
      '  p99 of another tenant before / during it',
      `${ms(emptyContact.before.p99)} / ${ms(emptyContact.during.p99)} (${emptyContact.during.n})`,
      ...full(`${ms(fullContact.before.p99)} / ${ms(fullContact.during.p99)} (${fullContact.during.n})`).slice(1),
      '',
      'kept',
    ]);
    if (drop) {
      rows.push(['drop the oldest weekly partition (product retention): time', ...full(ms(drop.actionMs)), '', '≤ 1 s']);
      for (const st of drop.retention.steps)
        rows.push([`  ${st.statement.replace(/ CONCURRENTLY| FINALIZE/, '').replace(/PARTITION /, '')}`, ...full(ms(st.ms)), '', '']);
      const statementsMs = drop.retention.steps.reduce((sum, st) => sum + st.ms, 0);
      rows.push(['  the rest: reading the partitions from the catalog (3×)', ...full(ms(drop.actionMs - statementsMs)), '', '']);
      rows.push([
        '  p99 end to end before / during it',
        ...full(`${ms(drop.before.p99)} / ${ms(drop.during.p99)} (${drop.during.n})`),
        times(drop.during.p99 / drop.before.p99),
        'within 2×',
      ]);
    } else rows.push(['drop the oldest weekly partition', ...full('skipped: not partitioned'), '', '≤ 1 s']);
    if (churn)
      rows.push([
        `churn at full rate, ${opt.churnMinutes} min, 1 endpoint (vs empty end to end)`,
        ...full(`${n(churn.perSecond)}/s, p99 ${ms(churn.latency.p99)}`),
        times(churn.perSecond / emptyE2E.one.perSecond, 3),
        'autovacuum keeps up',
      ]);
    printColumns(rows);
    console.log('');
    console.log('Postgres block reads from outside shared_buffers during end to end (pg_stat_io):');
    for (const [name, e] of [
      ['empty, 1 endpoint', emptyE2E.one],
      [`empty, ${MANY} endpoints`, emptyE2E.hundred],
      ['full, 1 endpoint', fullE2E.one],
      [`full, ${MANY} endpoints`, fullE2E.hundred],
    ] as const)
      console.log(`  ${name}: ${ioLine(e.io) || 'none'}`);
    if (opt.statements) console.log(`Statements of each end-to-end round: ${path.join(dir, 'statements.txt')}`);
    console.log('Contact deletions: empty ' + emptyContact.left + '; full ' + fullContact.left);
    if (drop) {
      console.log(`Partition dropped: ${drop.what}, by dropPartitionsPastRetention with ${drop.retention.retentionDays} days:`);
      for (const line of dropStepLines(drop.retention)) console.log(`  ${line}`);
    }
    console.log('Waits before measuring:');
    console.log(
      `  empty end to end: a twin shape started after the fill, a warm-up round (${warmSeconds.toFixed(0)} s with the full one's), ` +
        `then idle ${idleWaitLine(emptyE2EWait)}`,
    );
    console.log(`  empty reads: ${idleWaitLine(emptyReadsWait)}`);
    for (const [i, s] of stepReads.entries())
      console.log(`  step ${i + 1} reads: ${writesSettledLine(s.writesWait)}; then idle ${idleWaitLine(s.readsWait)}`);
    console.log(`  full end to end: ${writesSettledLine(fullWritesWait)}; then a warm-up round, then idle ${idleWaitLine(fullE2EWait)}`);
    console.log('');
    console.log('Tables after each step of the fill (all partitions summed):');
    const growthRows: string[][] = [['step', 'table', 'partitions', 'rows', 'heap + TOAST', 'indexes', 'bytes per row (heap + indexes)']];
    for (const s of stepReads)
      for (const g of s.growth)
        growthRows.push([
          `${n(s.deliveries)} deliveries`,
          g.table,
          String(g.partitions),
          n(g.liveRows),
          mib(g.heapBytes),
          mib(g.indexBytes),
          g.liveRows ? `${n(g.heapBytes / g.liveRows)} + ${n(g.indexBytes / g.liveRows)}` : '',
        ]);
    printColumns(growthRows);
    if (churn) {
      console.log('');
      console.log(
        'Churn, each minute (dead rows / live rows, heap + TOAST, indexes, autovacuum runs so far; all partitions, then the written week):',
      );
      const churnRows: string[][] = [['minute', 'deliveries/s', ...GROWING_TABLES, 'written week']];
      for (const [i, s] of churn.samples.entries()) {
        const prev = churn.samples[i - 1];
        churnRows.push([
          String(i),
          prev ? n((s.sent - prev.sent) / (s.at - prev.at)) : '',
          ...s.growth.map((g) => `${n(g.deadRows)} / ${n(g.liveRows)}, ${mib(g.heapBytes)}, ${mib(g.indexBytes)}, ${g.autovacuums} av`),
          s.hot.map(hotLine).join('; '),
        ]);
      }
      printColumns(churnRows);
    }
    console.log('');
    console.log(
      `load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, after ${loadAfter.map((l) => l.toFixed(2)).join(' ')} (${os.cpus().length} cpus)`,
    );
    console.log(
      JSON.stringify({
        options: opt,
        plan,
        fill,
        partitioned,
        emptyE2EWait,
        emptyE2E,
        emptyReadsWait,
        emptyReads,
        emptyContact,
        stepReads,
        fullWritesWait,
        warmSeconds,
        fullE2EWait,
        fullE2E,
        fullContact,
        drop,
        churn,
      }),
    );
  }
}

/** The written week's partition: rows, dead rows against the point autovacuum starts, sizes, its autovacuums and the last one. */
function hotLine(h: PartitionGrowth): string {
  const last = h.lastAutovacuum ? `last ${h.lastAutovacuum.toISOString().slice(11, 19)} UTC` : 'none yet';
  return (
    `${h.partition} ${n(h.liveRows)} live, ${n(h.deadRows)} dead ` +
    `(autovacuum at ${n(h.vacuumAtDead)}), ${mib(h.heapBytes)} + ${mib(h.indexBytes)}, ${h.autovacuums} av (${last})`
  );
}

/** As much as the end-to-end events weigh (~1 KiB, bench/demand-events.ts), but random: stored, it compresses to 794 bytes (not to 146, as their repeated pad does). */
function randomPayload(): object {
  const padLength = 1024 - JSON.stringify(demandData('t_000000', 'c_000000', '')).length;
  return demandData('t_000000', 'c_000000', crypto.randomBytes(padLength).toString('base64url').slice(0, padLength));
}

/** `action` while `tenant` publishes at full rate: how long it took, and the p99 end to end of what was sent before it and during it. */
async function during(bench: ShapeBench, tenant: Tenant, tag: string, action: () => Promise<void>): Promise<During> {
  let stop = false;
  const start = now();
  const sending = bench.send(tenant, `during-${tag}`, Number.MAX_SAFE_INTEGER, 600, () => stop);
  let t0 = 0;
  let t1 = 0;
  try {
    await sleep(4_000);
    t0 = now();
    await action();
    t1 = now();
    await sleep(1_000);
  } finally {
    stop = true;
  }
  const sent = await sending;
  await bench.allArrived([...sent.keys()], tag);
  const lat = bench.latencies(sent);
  // Before: what was sent after the first second (the publishers' own start) and before the action.
  const before = latencyOf(lat.filter((l) => l.sentAt > start + 1_000 && l.sentAt < t0).map((l) => l.ms));
  const inside = latencyOf(lat.filter((l) => l.sentAt >= t0 && l.sentAt <= t1).map((l) => l.ms));
  return {
    actionMs: t1 - t0,
    before,
    during: inside,
    note: inside.n < 100 ? `only ${inside.n} deliveries were sent during it: its p99 is nearly their maximum` : '',
  };
}

/** The reads, each `opt.reads` times in a row through the API, p50 and p99. */
async function measureReads(db: pg.Pool, reader: ReadTimer, t: ReadTarget): Promise<Reads> {
  /**
   * `opt.reads` GETs of `paths` one at a time after 20 not counted (connection, plans, pages), each
   * timed to its answer's last byte in a process of its own (bench/read-timer.ts), then the SQL of the first once.
   */
  const time = async (paths: string[], sql: (q: Queryable) => Promise<unknown>): Promise<Latency> => {
    if (paths.length === 0) return { p50: NaN, p99: NaN, n: 0 };
    const times = await reader.time(paths, t.key, { warm: Math.min(20, opt.reads), n: opt.reads });
    return { ...latencyOf(times), sqlMs: await statementMs(db, sql) };
  };
  const limit = opt.pageLimit;
  const list = (filter: string, after?: string) =>
    `/api/v1/webhook_deliveries?limit=${limit}&${filter}${after ? `&after=${encodeURIComponent(after)}` : ''}`;
  /** Cursors of pages `depth` to `depth + 19` (or as deep as the list goes), as the route issues them: the edge row's (created_at, id). */
  const deepCursors = async (where: string, params: unknown[]): Promise<{ cursors: string[]; page: number }> => {
    const { rows: c } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries WHERE ${where}`, params);
    const pages = Math.floor((c[0]!.n - 1) / limit);
    const page = Math.max(1, Math.min(opt.depth, pages - 19));
    const { rows } = await db.query<{ ts: string; id: string }>(
      `SELECT created_at::text AS ts, id FROM deliveries WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET $${params.length + 1} LIMIT $${params.length + 2}`,
      [...params, page * limit - 1, 20 * limit],
    );
    return { cursors: rows.filter((_, i) => i % limit === 0).map((r) => encodePageKey(r)), page: page + 1 };
  };
  /** What GET /api/v1/webhook_deliveries runs (src/api/routes/deliveries.ts) for the page after `cursor`: the page, then the pacing of its open rows' endpoints. */
  const auditSql = (filter: DeliveryFilter, cursor?: string) => async (q: Queryable) => {
    const after = cursor !== undefined ? decodePageKey(cursor) : undefined;
    const rows = await listDeliveries(q, t.accountId, filter, { limit, after });
    await endpointPacing(q, rows.slice(0, limit));
  };
  const streamSql =
    (cursor: string, limit = 100) =>
    (q: Queryable) =>
      readStream(q, t.accountId, 'live', cursor, limit);
  const byEndpoint = `endpoint_id=${t.endpointId}`;
  const byStatus = 'status=exhausted';
  const endpointDeep = await deepCursors('account_id = $1 AND endpoint_id = $2', [t.accountId, t.endpointId]);
  const statusDeep = await deepCursors(`account_id = $1 AND status = 'exhausted'`, [t.accountId]);
  const { rows: streamRows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events WHERE account_id = $1 AND environment = 'live'`,
    [t.accountId],
  );
  const streamCursor = async (offset: number, count: number) =>
    (
      await db.query<{ cursor: string }>(
        `SELECT cursor::text FROM events WHERE account_id = $1 AND environment = 'live' ORDER BY cursor OFFSET $2 LIMIT $3`,
        [t.accountId, Math.max(0, offset), count],
      )
    ).rows
      .filter((_, i) => i % 100 === 0)
      .map((r) => r.cursor);
  const events = streamRows[0]!.n;
  const head = await streamCursor(events - 101, 1);
  const middle = await streamCursor(Math.floor(events / 2), 2_000);
  return {
    auditEndpointFirst: await time([list(byEndpoint)], auditSql({ endpointId: t.endpointId })),
    auditEndpointDeep: {
      ...(await time(
        endpointDeep.cursors.map((c) => list(byEndpoint, c)),
        auditSql({ endpointId: t.endpointId }, endpointDeep.cursors[0]),
      )),
      page: endpointDeep.page,
    },
    auditStatusFirst: await time([list(byStatus)], auditSql({ status: 'exhausted' })),
    auditStatusDeep: {
      ...(await time(
        statusDeep.cursors.map((c) => list(byStatus, c)),
        auditSql({ status: 'exhausted' }, statusDeep.cursors[0]),
      )),
      page: statusDeep.page,
    },
    stats: await time([`/api/v1/webhooks/${t.endpointId}/stats`], (q) => endpointHourlyStats(q, t.accountId, t.endpointId, 24)),
    streamHead: await time(
      head.map((c) => `/api/v1/events?after=${c}&limit=100`),
      streamSql(head[0]!),
    ),
    streamMiddle: await time(
      middle.map((c) => `/api/v1/events?after=${c}&limit=100`),
      streamSql(middle[0]!),
    ),
    streamDefaultHead: await time(
      head.map((c) => `/api/v1/events?after=${c}`),
      streamSql(head[0]!, DEFAULT_LIMIT),
    ),
    streamDefaultMiddle: await time(
      middle.map((c) => `/api/v1/events?after=${c}`),
      streamSql(middle[0]!, DEFAULT_LIMIT),
    ),
    floor: await time(['/healthz'], (q) => q.query('SELECT 1')),
  };
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await stopAll();
}
process.exit();
