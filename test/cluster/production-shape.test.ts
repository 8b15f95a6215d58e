/**
 * Faults on the production shape (`npm run production`, dev/production-shape.ts), started once
 * for the file from a fresh `npm run build`: embedded Postgres, a Temporal server on it, two
 * compiled API processes on one port and two compiled workers, delivering to a local HTTPS
 * receiver. Publishers go through the REST API like a tenant's would.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { issueApiKey } from '../../src/db/api-keys.js';
import { createAccount } from '../../src/db/directory.js';
import { createPool, type Db } from '../../src/db/pool.js';
import { freePort, isPortOpen } from '../../dev/ports.js';
import { startProductionShape, type ProductionShape } from '../../dev/production-shape.js';
import { apiProcess } from '../../dev/service-processes.js';
import { projectRoot } from '../../dev/tools.js';
import { SCOPES } from '../../src/security/api-key.js';
import { endpointWorkflowId } from '../../src/workflows/endpoint-contract.js';
import { eventually } from '../support/harness.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/https-receiver.js';
import { expectOnlyUnrecordedResent } from '../support/resends.js';

let shape: ProductionShape;
let db: Db;
let temporal: Client;
let receiver: Receiver;
let key: string;
/** What the launcher said: its supervisor's lines when a process crashed and came back. */
const said: string[] = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'production-shape-'));
// Embedded Postgres runs as a `postgres` user when the tests run as root: it must reach its folder.
fs.chmodSync(dataDir, 0o755);

beforeAll(async () => {
  const t0 = Date.now();
  // The shape runs the compiled code: build it as `npm run production` does.
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'ignore' });
  const t1 = Date.now();
  receiver = await startReceiver();
  shape = await startProductionShape({
    dataDir,
    env: {
      WEBHOOKS_DEV_MODE: '1',
      WEBHOOKS_DEV_CA_FILE: inject('tls').caFile,
      // Publishers here outrun the per-key limit on purpose; the limit has tests of its own.
      RATE_LIMIT_BURST: '100000',
      RATE_LIMIT_PER_SECOND: '100000',
      LOG_LEVEL: 'info',
      VITEST: '',
    },
    say: (line) => said.push(line),
  });
  console.log(`npm run build ${((t1 - t0) / 1000).toFixed(1)} s; shape started in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  db = createPool(shape.databaseUrl, 4);
  temporal = new Client({ connection: await Connection.connect({ address: shape.temporalAddress }) });
  const account = await createAccount(db, { name: 'shape', ownerEmail: 'owner@example.com', plan: 'paid' });
  key = (await issueApiKey(db, { accountId: account.id, environment: 'live', scopes: [...SCOPES] })).key;
}, 300_000);

afterAll(async () => {
  await temporal?.connection.close();
  await db?.end();
  await shape?.stop();
  await receiver?.close();
  if (!process.env.KEEP_SHAPE_DATA) fs.rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

/** Far beyond a request's time here (milliseconds under this load), far below fetch's own (300 s for the answer's headers). */
const REQUEST_TIMEOUT_MS = 10_000;

async function api(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${shape.apiUrl}${url}`, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    // A request that stalls fails, to be retried, as a careful client's would, rather than holding up its publisher.
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** A verified endpoint on the local receiver. */
async function endpoint(prefix: string): Promise<string> {
  receiver.reply({ status: 200 });
  const created = await api('POST', '/api/v1/webhooks', { url: `https://127.0.0.1:${receiver.port}${prefix}`, events: ['crm'] });
  expect(created.status).toBe(201);
  expect((await api('POST', `/api/v1/webhooks/${created.body.data.id}/test`)).status).toBe(200);
  return created.body.data.id;
}

const demand = (id: string) => ({
  type: 'crm.demand.created',
  data: {
    entity_type: 'demand',
    entity_id: id,
    before_data: null,
    after_data: { id, version: 1, status: 'open', contact_id: 'c_shape', title: 'Quote' },
    actor_user_id: null,
  },
});

/** Retries so far, and the requests among their causes that timed out: a stall, not a reset (the tests log both). */
const retried = { count: 0, timedOut: 0 };
const retriesSince = (before: typeof retried) =>
  `${retried.count - before.count} publishes retried (${retried.timedOut - before.timedOut} requests timed out)`;
const PUBLISH_ATTEMPTS = 5;
/**
 * One publish, retried like a careful client: a connection reset, a request timeout or a 5xx is
 * sent again with the same body, which the event's idempotency key (entity and version) makes
 * safe. Throws when it never got a 2xx: after at most PUBLISH_ATTEMPTS requests and their backoff.
 */
async function publish(entityId: string): Promise<void> {
  let last = '';
  for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
    if (attempt > 0) retried.count++;
    try {
      const res = await api('POST', '/api/v1/events', demand(entityId));
      if (res.status === 201 || res.status === 200) return;
      last = `${res.status} ${JSON.stringify(res.body)}`;
      if (res.status < 500) break;
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') retried.timedOut++;
      last = String((err as Error).cause ?? err);
    }
    await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
  }
  throw new Error(`publish ${entityId} failed: ${last}`);
}

/** `n` publishers publishing until stopped; what each got answered, and the publishes that never succeeded. */
function publishers(n: number, tag: string) {
  const published: string[] = [];
  const failed: string[] = [];
  let stop = false;
  const running = Array.from({ length: n }, async (_, p) => {
    for (let i = 0; !stop; i++) {
      const id = `dem_${tag}_${p}_${i}`;
      try {
        await publish(id);
        published.push(id);
      } catch (err) {
        failed.push(String(err));
      }
    }
  });
  return {
    published,
    failed,
    async stop() {
      stop = true;
      await Promise.all(running);
    },
  };
}

const posts = (prefix: string): ReceivedRequest[] => receiver.deliveriesUnder(prefix);
/** The entity a POST is about, from its idempotency key (`crm:demand:<entity>:<version>`). */
const entityOf = (p: ReceivedRequest): string => String(p.headers['x-idempotency-key']).split(':')[2]!;

/** For each idempotency key: when each of its POSTs arrived (ms from `sinceMs`), and its delivery's attempts as recorded. */
async function twiceStory(keys: [string, number][], endpointId: string, prefix: string, sinceMs: number): Promise<string> {
  const lines: string[] = [];
  const times: number[] = [];
  for (const [key] of keys) {
    const copies = posts(prefix).filter((p) => String(p.headers['x-idempotency-key']) === key);
    times.push(...copies.map((p) => p.atMs));
    const arrivals = copies.map((p) => `${p.atMs - sinceMs} ms (webhook-id ${String(p.headers['webhook-id'])})`);
    const { rows } = await db.query<{ n: number; started_at: Date; code: number | null; error: string | null }>(
      `SELECT a.number AS n, a.started_at, a.response_code AS code, a.error
         FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id
        WHERE d.idempotency_key = $1 AND d.endpoint_id = $2 ORDER BY a.started_at`,
      [key, endpointId],
    );
    const attempts = rows.map((r) => `#${r.n} at ${r.started_at.getTime() - sinceMs} ms: ${r.code ?? r.error}`);
    lines.push(`  ${key}: received at ${arrivals.join(', ')}; attempts ${attempts.join(', ') || 'none'}`);
  }
  // What the processes warned of around the copies: a record not written, a session that failed.
  const around = warnings((at) => at >= Math.min(...times) - 2_000 && at <= Math.max(...times) + 1_000, 30);
  lines.push(`  warnings from 2 s before the first copy to 1 s after the last:${around.map((w) => `\n    ${w}`).join('') || ' none'}`);
  return lines.join('\n');
}

/** Deliveries of the endpoint (test deliveries aside), with how many of their attempts succeeded. */
const deliveries = async (endpointId: string) =>
  (
    await db.query<{ idempotency_key: string; status: string; successes: number }>(
      `SELECT d.idempotency_key, d.status,
              (SELECT count(*)::int FROM delivery_attempts a
                WHERE a.delivery_id = d.id AND a.error IS NULL AND a.response_code BETWEEN 200 AND 299) AS successes
         FROM deliveries d WHERE d.endpoint_id = $1 AND d.event_type <> 'webhook.test'`,
      [endpointId],
    )
  ).rows;

/**
 * Waits until the endpoint has at least `expected` deliveries (more when a publish whose answer was
 * lost had been stored) and every one succeeded; then none has two successful attempts.
 */
async function allDelivered(endpointId: string, expected: number, timeoutMs = 120_000) {
  const rows = await eventually(async () => {
    const r = await deliveries(endpointId);
    return r.length >= expected && r.every((d) => d.status === 'success') ? r : undefined;
  }, timeoutMs);
  expect(rows.filter((d) => d.successes !== 1)).toEqual([]);
  return rows;
}

/** The pid of the worker process running the endpoint's delivery session now (the SDK's identity is pid@host). */
async function sessionWorkerPid(endpointId: string): Promise<number | undefined> {
  // A direct session (src/delivery/direct-sessions.ts) runs with no activity: its live lease on the endpoint
  // names its process. Asked first: the workflow's deliverDue of a killed worker stays pending, naming
  // the dead worker, until it is retried, while a direct session of the survivor may already deliver.
  const { rows } = await db.query<{ owner: string | null }>(
    `SELECT session_owner AS owner FROM endpoints WHERE id = $1 AND session_until >= now()`,
    [endpointId],
  );
  const direct = rows[0]?.owner?.match(/^direct\/(\d+)\//);
  if (direct) return Number(direct[1]);
  const { raw } = await temporal.workflow.getHandle(endpointWorkflowId(endpointId)).describe();
  const identity = raw.pendingActivities?.find((a) => a.activityType?.name === 'deliverDue')?.lastWorkerIdentity;
  return identity ? Number(identity.split('@')[0]) : undefined;
}

/**
 * A test's phases, each with its own bounded wait: each says how long it took as it ends, and a
 * failing one says which it was; so a test that runs out of time shows the phase that stalled.
 */
function phases(test: string) {
  return async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    const took = () => `${((Date.now() - t) / 1000).toFixed(1)} s`;
    try {
      const value = await run();
      console.log(`${test}: ${name} took ${took()}`);
      return value;
    } catch (err) {
      throw new Error(`${test}: ${name} failed after ${took()}: ${(err as Error).message}`, { cause: err });
    }
  };
}

/**
 * The last lines at warn level or above (pino's 40+) that the API and worker processes logged, of
 * those `keep` takes (by time and line).
 */
function warnings(keep: (atMs: number, line: string) => boolean, last = 10): string[] {
  const logsDir = path.join(shape.dataDir, 'logs');
  return fs
    .readdirSync(logsDir)
    .filter((f) => /^(api|worker)-\d+\.log$/.test(f))
    .flatMap((f) =>
      fs
        .readFileSync(path.join(logsDir, f), 'utf8')
        .split('\n')
        .filter((line) => /"level":(4|5|6)0/.test(line) && keep(Number(/"time":(\d+)/.exec(line)?.[1]), line))
        .map((line) => `${f}: ${line}`),
    )
    .slice(-last);
}

/** The last lines at warn level or above that the API and worker processes logged about `id`. */
const warningsAbout = (id: string, last = 10): string[] => warnings((_, line) => line.includes(id), last);

const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/**
 * The local ports of the TCP connections process `pid` holds to `serverPort` on this machine: the
 * connections in its network namespace's tables (/proc/<pid>/net/tcp, tcp6) whose socket is one of
 * its open files. The receiver knows each POST's remote port, so this says which worker sent it.
 */
function clientPortsOf(pid: number, serverPort: number): Set<number> {
  const owned = new Set<string>();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    const target = (() => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return ''; // closed meanwhile
      }
    })();
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) owned.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    for (const line of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (address: string) => parseInt(address.split(':').at(-1)!, 16);
      if (port(f[2]!) === serverPort && owned.has(f[9]!)) ports.add(port(f[1]!));
    }
  }
  return ports;
}

describe('the production shape', () => {
  it('runs the compiled API and workers (no TypeScript loader), serving the API, its console files and the Web UI', async () => {
    for (const p of [...shape.apis, ...shape.workers]) {
      const argv = cmdline(p.pid!);
      expect(argv.join(' ')).toMatch(/dist\/src\/(api|worker)\/main\.js$/);
      expect(argv.join(' ')).not.toMatch(/tsx/);
    }
    expect(shape.apis).toHaveLength(2);
    expect(shape.workers).toHaveLength(2);
    const health = await fetch(`${shape.apiUrl}/healthz`);
    expect(await health.json()).toMatchObject({ postgres: true, temporal: true });
    // Read from dist/console at run time.
    const page = await fetch(`${shape.apiUrl}/console/app.js`);
    expect(page.status).toBe(200);
    expect((await fetch(`${shape.uiUrl}/api/v1/namespaces/default`)).status).toBe(200);
  });

  // Fails if both guards go: the launcher's check of the port, and the warm-up's exclusive listen, which the cluster does not report.
  it('an API process is started only once it answers on its port: its warm-up listens on loopback first, which is not it', async () => {
    const port = await freePort();
    const logFile = path.join(shape.dataDir, 'logs', 'api-warming.log');
    const api = apiProcess({
      name: 'api-warming',
      env: {
        ...process.env,
        VITEST: '',
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        DATABASE_URL: shape.databaseUrl,
        TEMPORAL_ADDRESS: shape.temporalAddress,
        DATA_DIR: shape.dataDir,
        PORT: String(port),
        HOST: '127.0.0.1',
        // Seconds of warm-up, so a start taken as done at the warm-up's own listen is found out.
        WARM_UP_REQUESTS: '20000',
      },
      log: { file: logFile },
    });
    try {
      await api.start();
      // At once, with no retry: the start says it serves.
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(res.status).toBe(200);
    } finally {
      await api.stop();
    }
    // Read once it has stopped: a process writes its log lines in batches, flushed at exit.
    const lines = fs.readFileSync(logFile, 'utf8');
    expect(lines.indexOf('publish route warmed up')).toBeGreaterThan(-1);
    expect(lines.indexOf('publish route warmed up')).toBeLessThan(lines.indexOf('api listening'));
  }, 120_000);

  it('kill -9 of the worker running a session mid-drain, held down: the other worker delivers while it is down (the POSTs come on its sockets); nothing lost, no double success, duplicates only for POSTs in flight', async () => {
    const prefix = `/kill-worker/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    const phase = phases('worker kill');
    const BACKLOG = 300;
    const WHILE_DOWN = 60;
    receiver.reply({ status: 200, delayMs: 100 });
    for (let n = 0; n < BACKLOG; n += 20) await Promise.all(Array.from({ length: 20 }, (_, i) => publish(`dem_kill_${n + i}`)));
    await eventually(async () => posts(prefix).length >= 40);
    const pid = await eventually(() => sessionWorkerPid(id));
    const victim = shape.workers.find((w) => w.pid === pid)!;
    const survivor = shape.workers.find((w) => w !== victim)!;
    expect(victim).toBeDefined();
    const survivorPid = survivor.pid!;
    // The victim's connections just before the kill: a POST it had written whole may still be read after it died.
    const victimPorts = clientPortsOf(pid, receiver.port);
    let letGo!: () => void;
    await victim.kill9({ holdDown: new Promise<void>((resolve) => (letGo = resolve)) });
    const atKill = posts(prefix).length;
    const recordedBeforeKill = new Set((await deliveries(id)).filter((d) => d.status === 'success').map((d) => d.idempotency_key));
    const sentBeforeKill = new Set(posts(prefix).map((p) => String(p.headers['x-idempotency-key'])));
    expect(recordedBeforeKill.size).toBeLessThan(BACKLOG - WHILE_DOWN);

    // Held down: the launcher has not started it again, so every POST now is the survivor's.
    const survivorPorts = new Set<number>();
    await phase(`${WHILE_DOWN} POSTs while the victim is down`, () =>
      eventually(async () => {
        for (const port of clientPortsOf(survivorPid, receiver.port)) survivorPorts.add(port);
        return posts(prefix).length >= atKill + WHILE_DOWN;
      }, 120_000),
    );
    for (const port of clientPortsOf(survivorPid, receiver.port)) survivorPorts.add(port);
    expect(victim.pid).toBeUndefined();
    expect(await sessionWorkerPid(id)).not.toBe(pid);
    const whileDown = posts(prefix).slice(atKill);
    const bySurvivor = whileDown.filter((p) => survivorPorts.has(p.remotePort!));
    // Anything else is a POST the victim had written whole before it died, on one of its connections: one per lane at most.
    expect(whileDown.filter((p) => !survivorPorts.has(p.remotePort!) && !victimPorts.has(p.remotePort!))).toEqual([]);
    expect(whileDown.length - bySurvivor.length).toBeLessThanOrEqual(16);
    console.log(
      `worker kill: ${bySurvivor.length} of ${whileDown.length} POSTs while the victim was down came from the survivor's sockets`,
    );
    letGo();

    await phase('all delivered', () => allDelivered(id, BACKLOG));
    expect(survivor.pid).toBe(survivorPid);
    // Sent twice: only POSTs the dead worker had made and not recorded (in flight, or answered with the record not yet landed).
    const twice = expectOnlyUnrecordedResent(posts(prefix), {
      expected: BACKLOG,
      sentBefore: sentBeforeKill,
      recordedBefore: recordedBeforeKill,
    });
    console.log(`worker kill: ${twice.length} of ${BACKLOG} POSTs sent twice (in flight at the kill)`);
    // Let go, the launcher started the killed worker again.
    await phase('victim back', () => eventually(async () => victim.pid !== undefined && victim.pid !== pid, 120_000));
    expect(said).toContain(`${victim.name} exited (SIGKILL); starting it again in 1 s.`);
  }, 300_000);

  it('kill -9 of the preferred worker, held down: events published at once after it reach an idle endpoint through the other worker, before a sweep for overdue work could have found them', async () => {
    const prefix = `/kill-preferred/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    const phase = phases('preferred worker kill');
    receiver.reply({ status: 200 });
    // The preferred worker starts every new session (the other leaves it the news): the one that runs this endpoint's is it.
    const tag = crypto.randomUUID().slice(0, 8);
    await publish(`dem_pref_probe_${tag}`);
    const pid = await eventually(() => sessionWorkerPid(id));
    const victim = shape.workers.find((w) => w.pid === pid)!;
    expect(victim).toBeDefined();
    // Idle again (its session has ended), so nothing of this endpoint waits on a dead session's lease.
    await eventually(async () => (await sessionWorkerPid(id)) === undefined, 60_000);
    let letGo!: () => void;
    await victim.kill9({ holdDown: new Promise<void>((resolve) => (letGo = resolve)) });
    // Within the other worker's look (every 2 s), it still sees the victim preferred and leaves it
    // this news; the look that finds it gone takes the preference and routes all that is due.
    const entities = Array.from({ length: 20 }, (_, i) => `dem_pref_${tag}_${i}`);
    await Promise.all(entities.map((e) => publish(e)));
    const publishedAt = Date.now();
    await phase('delivered while the victim is down', () =>
      eventually(async () => entities.every((e) => posts(prefix).some((p) => entityOf(p) === e)), 120_000),
    );
    expect(victim.pid).toBeUndefined();
    const lastAt = Math.max(...entities.map((e) => posts(prefix).find((p) => entityOf(p) === e)!.atMs));
    console.log(`preferred worker kill: the 20 events were delivered ${lastAt - publishedAt} ms after they were published`);
    // The periodic sweep (DUE_SWEEP_MS, 30 s) finds only work overdue by its interval: these came through the takeover.
    expect(lastAt - publishedAt).toBeLessThan(30_000);
    letGo();
    await phase('victim back', () => eventually(async () => victim.pid !== undefined && victim.pid !== pid, 120_000));
  }, 300_000);

  it('kill -9 of an API process under load: the launcher starts it again; 0 failed publishes, 0 lost events', async () => {
    const prefix = `/kill-api/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    receiver.reply({ status: 200 });
    const retriedBefore = { ...retried };
    const phase = phases('API kill');
    const load = publishers(4, 'api-kill');
    // The waits add up to 225 s at most, inside the test's 240 s: the stop's is a publish's own bound (5 attempts of 10 s, 2 s of backoff).
    await phase('50 published', () => eventually(async () => load.published.length >= 50, 20_000));
    const victim = shape.apis[0]!;
    const pid = victim.pid!;
    // From outside, as the kernel's OOM killer would: not through the handle.
    process.kill(pid, 'SIGKILL');
    const back = await phase('back', () => eventually(async () => victim.pid !== undefined && victim.pid !== pid && victim.pid, 30_000));
    const before = load.published.length;
    await phase('100 more published', () => eventually(async () => load.published.length >= before + 100, 30_000));
    await phase('publishers stopped', () => load.stop());
    expect(load.failed).toEqual([]);
    expect(cmdline(back).join(' ')).toMatch(/dist\/src\/api\/main\.js$/);
    expect(said).toContain(`${victim.name} exited (SIGKILL); starting it again in 1 s.`);
    const published = new Set(load.published);
    console.log(`API kill: ${published.size} published, ${retriesSince(retriedBefore)}, back as pid ${back}`);
    expect((await phase('all delivered', () => allDelivered(id, published.size, 90_000))).length).toBe(published.size);
    const received = new Set(posts(prefix).map(entityOf));
    expect([...published].filter((e) => !received.has(e))).toEqual([]);
  }, 240_000);

  it('a rolling restart of every API and worker process under load: 0 failed publishes, 0 lost events', async () => {
    const prefix = `/rolling/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    receiver.reply({ status: 200 });
    const retriedBefore = { ...retried };
    const phase = phases('rolling restart');
    const load = publishers(4, 'rolling');
    // The waits besides the restarts' own add up to 195 s at most; the restarts take seconds each.
    await phase('50 published', () => eventually(async () => load.published.length >= 50, 20_000));
    for (const p of [...shape.apis, ...shape.workers]) {
      await phase(`${p.name} restarted`, () => p.restart());
      await new Promise((r) => setTimeout(r, 500));
    }
    const before = load.published.length;
    await phase('100 more published', () => eventually(async () => load.published.length >= before + 100, 30_000));
    await phase('publishers stopped', () => load.stop());
    expect(load.failed).toEqual([]);
    const published = new Set(load.published);
    console.log(`rolling restart: ${published.size} events published during it, ${retriesSince(retriedBefore)}`);
    expect((await phase('all delivered', () => allDelivered(id, published.size, 90_000))).length).toBe(published.size);
    const received = new Set(posts(prefix).map(entityOf));
    expect([...published].filter((e) => !received.has(e))).toEqual([]);
  }, 240_000);

  it('kill -9 of the Temporal server while a failing endpoint waits on its workflow for a retry, held down: no retry while it is down though one is due; started again on its Postgres, the workflow retries and delivers every event once', async () => {
    const prefix = `/kill-temporal/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    const phase = phases('Temporal kill');
    const EVENTS = 20;
    const tag = crypto.randomUUID().slice(0, 8);
    receiver.replyOn(prefix, { status: 500 });
    try {
      await Promise.all(Array.from({ length: EVENTS }, (_, i) => publish(`dem_temporal_${tag}_${i}`)));
      // A failure gives the endpoint a streak: no direct session takes it any more (src/delivery/direct-sessions.ts);
      // its retry is a timer of its workflow, and no session of it runs now.
      // What each look saw, as it changed: said if the wait runs out, or takes long (a full run once
      // stalled here for over a minute with nothing to go on; this is usually well under a second).
      const seen: string[] = [];
      const t0 = Date.now();
      const story = () => `${seen.join('\n')}\nthe processes' warnings about it:\n${warningsAbout(id).join('\n')}`;
      const retryAt = await phase('failed, retry set on the workflow', () =>
        eventually(async () => {
          const { rows } = await db.query<{ failure_streak: number; next_attempt_at: Date | null; handover_at: Date | null }>(
            `SELECT failure_streak, next_attempt_at, handover_at, health_status, session_owner,
               (SELECT json_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM deliveries WHERE endpoint_id = $1 GROUP BY status) s) AS deliveries
             FROM endpoints WHERE id = $1`,
            [id],
          );
          const e = rows[0]!;
          const { raw, status } = await temporal.workflow.getHandle(endpointWorkflowId(id)).describe();
          const pending = (raw.pendingActivities ?? []).map((a) => ({
            type: a.activityType?.name,
            state: a.state,
            attempt: a.attempt,
            worker: a.lastWorkerIdentity,
            failure: a.lastFailure?.message,
          }));
          const look = JSON.stringify({ endpoint: e, workflow: status.name, pending, posts: posts(prefix).length });
          if (seen.at(-1)?.endsWith(look) !== true) seen.push(`${((Date.now() - t0) / 1000).toFixed(1)} s: ${look}`);
          if (e.failure_streak < 1 || !e.next_attempt_at || e.handover_at) return undefined;
          return pending.length === 0 && e.next_attempt_at;
        }, 150_000).catch((err: Error) => {
          throw new Error(`${err.message}; what it saw:\n${story()}`);
        }),
      );
      if (Date.now() - t0 > 30_000) console.warn(`Temporal kill: the retry took long to be set; what the test saw:\n${story()}`);
      const failedPosts = posts(prefix).length;
      expect(failedPosts).toBeGreaterThanOrEqual(1);
      const pid = shape.temporal.pid!;
      let letGo!: () => void;
      await phase('killed', () => shape.temporal.kill9({ holdDown: new Promise<void>((resolve) => (letGo = resolve)) }));
      // The receiver recovers while Temporal is down.
      receiver.replyOn(prefix, { status: 200 });
      // Held down until the retry is overdue by Postgres's clock, which the workflow's timer follows too.
      await phase('retry due while down', () =>
        eventually(
          async () => (await db.query(`SELECT now() > $1::timestamptz + interval '2 seconds' AS due`, [retryAt])).rows[0].due,
          150_000,
        ),
      );
      expect(shape.temporal.pid).toBeUndefined();
      expect(posts(prefix).length).toBe(failedPosts);
      const atLetGo = posts(prefix).length;
      letGo();
      await phase('back', () => eventually(async () => shape.temporal.pid !== undefined && shape.temporal.pid !== pid, 60_000));
      const rows = await phase('all delivered', () => allDelivered(id, EVENTS, 120_000));
      expect(rows).toHaveLength(EVENTS);
      // Every POST before the kill failed; every one since Temporal came back succeeded, each event once.
      const after = posts(prefix).slice(atLetGo);
      expect(new Set(after.map(entityOf)).size).toBe(EVENTS);
      expect(after).toHaveLength(EVENTS);
      expect(said).toContain('temporal-server exited (SIGKILL); starting it again in 1 s.');
    } finally {
      receiver.replyOn(prefix, null);
    }
  }, 300_000);

  it('kill -9 of the embedded Postgres postmaster under publishing load, after 3,000 acknowledged publishes with deliveries still owed: the launcher starts it again on its folder; no acknowledged publish lost, none recorded as delivered twice, POSTs sent twice only before it was back', async () => {
    const prefix = `/kill-postgres/${crypto.randomUUID()}`;
    const id = await endpoint(prefix);
    const phase = phases('Postgres kill');
    // A slow receiver: deliveries are still owed (in flight or pending) behind the publishes at the kill.
    receiver.reply({ status: 200, delayMs: 50 });
    const load = publishers(4, `pg_${crypto.randomUUID().slice(0, 8)}`);
    await phase('3,000 published', () => eventually(async () => load.published.length >= 3_000, 200_000));
    const pgDir = path.join(shape.dataDir, 'postgres');
    // The postmaster by its pid file, killed from outside as the OOM killer would.
    const pid = Number(fs.readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    expect(shape.postgres!.pid).toBe(pid);
    const recordedBeforeKill = new Set((await deliveries(id)).filter((d) => d.status === 'success').map((d) => d.idempotency_key));
    const publishedAtKill = load.published.length;
    const saidBefore = said.length;
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    expect(recordedBeforeKill.size).toBeLessThan(publishedAtKill);
    await phase('back', () => eventually(async () => shape.postgres!.pid !== undefined && shape.postgres!.pid !== pid, 120_000));
    const sentBeforeBack = new Set(posts(prefix).map((p) => String(p.headers['x-idempotency-key'])));
    const before = load.published.length;
    await phase('100 more published', () => eventually(async () => load.published.length >= before + 100, 120_000));
    await phase('publishers stopped', () => load.stop());
    expect(said).toContain('postgres exited (SIGKILL); starting it again in 1 s.');
    const published = new Set(load.published);
    console.log(
      `Postgres kill: ${published.size} acknowledged (${publishedAtKill} at the kill), ${recordedBeforeKill.size} delivered then; ${load.failed.length} publishes never acknowledged`,
    );
    // What else went down with it and came back (the Temporal server's connections are to it too), a failed start included.
    console.log(`Postgres kill: the launcher said: ${said.slice(saidBefore).join(' | ')}`);
    const rows = await phase('all delivered', () => allDelivered(id, published.size, 240_000));
    const received = new Set(posts(prefix).map(entityOf));
    expect([...published].filter((e) => !received.has(e))).toEqual([]);
    // A POST answered while its record could not be written is sent again: only those, and only twice.
    const counts = new Map<string, number>();
    for (const p of posts(prefix))
      counts.set(String(p.headers['x-idempotency-key']), (counts.get(String(p.headers['x-idempotency-key'])) ?? 0) + 1);
    expect(counts.size).toBe(rows.length);
    const twice = [...counts].filter(([, n]) => n > 1);
    const unexpected = twice.filter(([key, n]) => n > 2 || !sentBeforeBack.has(key) || recordedBeforeKill.has(key));
    // Why, should it come back: each POST's receipt against the kill, and the attempts Postgres kept.
    if (unexpected.length > 0)
      console.log(`Postgres kill: sent twice unexpectedly:\n${await twiceStory(unexpected, id, prefix, killedAt)}`);
    expect(unexpected).toEqual([]);
    console.log(`Postgres kill: ${twice.length} of ${rows.length} POSTs sent twice (answered while Postgres was down)`);
  }, 600_000);
});

describe('npm run production', () => {
  it('prints the API and Web UI addresses and a first-start key, serves, and stops in order on Ctrl-C with exit 0', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'production-cli-'));
    fs.chmodSync(dir, 0o755);
    const [port, temporalPort, uiPort] = [await freePort(), await freePort(), await freePort()];
    // What `npm run production` runs after its build (the file's beforeAll built dist/).
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/production.ts'], {
      cwd: projectRoot,
      env: {
        ...process.env,
        VITEST: '',
        DATA_DIR: dir,
        PORT: String(port),
        TEMPORAL_PORT: String(temporalPort),
        TEMPORAL_UI_PORT: String(uiPort),
        API_PROCESSES: '1',
        WORKER_PROCESSES: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await eventually(
        async () => out.includes('Ctrl-C stops everything') || (child.exitCode !== null && Promise.reject(new Error(out))),
        180_000,
      );
      expect(out).toContain(`API:             http://127.0.0.1:${port}`);
      expect(out).toContain(`Temporal Web UI: http://127.0.0.1:${uiPort}`);
      const liveKey = /Live API key:\s+(\S+)/.exec(out)![1]!;
      const listed = await fetch(`http://127.0.0.1:${port}/api/v1/webhooks`, { headers: { 'x-api-key': liveKey } });
      expect(listed.status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${uiPort}/api/v1/namespaces/default`)).status).toBe(200);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
      const order = ['the API processes', 'the workers', 'the Web UI', 'the Temporal server', 'Postgres'].map((p) =>
        out.indexOf(`Stopped ${p}.`),
      );
      expect(order.every((at) => at > 0)).toBe(true);
      expect([...order].sort((a, b) => a - b)).toEqual(order);
      const postgresPort = (JSON.parse(fs.readFileSync(path.join(dir, 'production', 'postgres.json'), 'utf8')) as { port: number }).port;
      for (const p of [port, temporalPort, uiPort, postgresPort]) expect(await isPortOpen(p)).toBe(false);
    } finally {
      child.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
