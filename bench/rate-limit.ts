/**
 * Cost of the shared per-key rate limit (src/api/rate-limiter.ts) per request: CPU of this process and
 * of its Postgres backend, and statements sent, per 1,000 requests; beside the in-process bucket
 * it replaced (src/core/token-bucket.ts), which cost no statement but held only per process.
 *
 *   npm run bench:rate-limit                      # embedded Postgres in .data/bench-rate-limit
 *   DATABASE_URL=... npm run bench:rate-limit     # an existing server (a scratch database!)
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRateLimiter, type RateLimiter } from '../src/api/rate-limiter.js';
import { take, type Bucket } from '../src/core/token-bucket.js';
import { issueApiKey } from '../src/db/api-keys.js';
import { createAccount } from '../src/db/directory.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { projectRoot } from '../dev/tools.js';
import { SCOPES } from '../src/security/api-key.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200_000);
const TICK_SECONDS = 1 / Number(process.env.CLK_TCK ?? 100);

/** CPU seconds the backend process `pid` has used (Linux /proc; 0 elsewhere). */
function backendCpu(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_SECONDS;
  } catch {
    return 0;
  }
}

async function measure(name: string, db: Db, limiter: RateLimiter, keys: string[], pid: number) {
  const cpu0 = process.cpuUsage();
  const pg0 = backendCpu(pid);
  const statements0 = limiter.statements;
  const started = performance.now();
  let allowed = 0;
  for (let i = 0; i < REQUESTS; i++) {
    let v = limiter.take(keys[i % keys.length]!);
    if (v instanceof Promise) v = await v;
    if (v.allowed) allowed++;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const perRequestUs = (cpu.user + cpu.system) / REQUESTS;
  const pgUs = ((backendCpu(pid) - pg0) * 1e6) / REQUESTS;
  const statements = ((limiter.statements - statements0) * 1000) / REQUESTS;
  console.log(
    `${name}: ${REQUESTS} requests in ${seconds.toFixed(2)} s, ${allowed} allowed; ` +
      `API CPU ${perRequestUs.toFixed(2)} µs/request, Postgres CPU ${pgUs.toFixed(2)} µs/request, ${statements.toFixed(2)} statements per 1,000 requests`,
  );
}

function measureInProcess(keys: string[]) {
  const buckets = new Map<string, Bucket>();
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < REQUESTS; i++) {
    const key = keys[i % keys.length]!;
    buckets.set(key, take(buckets.get(key), Date.now(), 1e9, 1e9).bucket);
  }
  const cpu = process.cpuUsage(cpu0);
  console.log(
    `in-process bucket (before; per process only): API CPU ${((cpu.user + cpu.system) / REQUESTS).toFixed(2)} µs/request, 0 statements`,
  );
}

async function main() {
  const pg = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => {} }
    : await startEmbeddedPostgres(path.join(projectRoot, '.data', 'bench-rate-limit'));
  await migrate(pg.url);
  // One connection, so its backend is the one whose CPU is read.
  const db = createPool(pg.url, 1);
  const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const account = await createAccount(db, { name: 'bench-rate-limit', ownerEmail: 'bench@example.com', plan: 'paid' });
  const issue = async () => (await issueApiKey(db, { accountId: account.id, environment: 'live', scopes: [...SCOPES] })).id;
  const oneKey = [await issue()];
  const manyKeys = await Promise.all(Array.from({ length: 100 }, issue));
  console.log(`load average ${fs.readFileSync('/proc/loadavg', 'utf8').trim()}`);

  measureInProcess(oneKey);
  const roomy = createRateLimiter(db, { capacity: 1e9, refillPerSecond: 1e9 });
  await measure('shared, one busy key with headroom', db, roomy, oneKey, pid);
  await measure('shared, 100 keys with headroom', db, roomy, manyKeys, pid);
  // The default limit, hammered far beyond it: refusals are answered in memory.
  const strict = createRateLimiter(db, { capacity: 100, refillPerSecond: 20 });
  await measure('shared, one key far over 100 + 20/s', db, strict, [await issue()], pid);
  await Promise.all([roomy.close(), strict.close()]);
  await db.end();
  await pg.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
