/**
 * Stats benchmark: GET /api/v1/webhooks/{id}/stats on an endpoint with a long history. Fills one
 * endpoint with BENCH_DELIVERIES deliveries (one attempt each, every tenth failed) spread over 90
 * days with SQL generate_series (the attempts trigger of migration 0030 rolls them up: about 2,160
 * hourly rows), then prints the route's p50/p99 over BENCH_REQUESTS sequential requests, and, for
 * comparison, the scan of the endpoint's deliveries that the route ran before the rollups.
 *
 *   npm run bench:stats            (request logs at warn and above: LOG_LEVEL=info to see them)
 *   BENCH_DELIVERIES=200000 BENCH_REQUESTS=500 npm run bench:stats
 *
 * Runs on a fresh database `bench_stats` of the embedded server in .data/bench-stats (or of the
 * server of DATABASE_URL), dropped at the end.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { createApiKeyCache } from '../src/api/api-key-cache.js';
import { createApp } from '../src/api/app.js';
import { issueApiKey } from '../src/db/api-keys.js';
import { createAccount } from '../src/db/directory.js';
import { dueChannel } from '../src/db/due-notifications.js';
import { endpointHourlyStats } from '../src/db/endpoint-hourly-stats.js';
import { migrate } from '../src/db/migrate.js';
import { createPool } from '../src/db/pool.js';
import { createHttpClient } from '../src/delivery/http-client.js';
import { endpointWorkflows } from '../src/delivery/workflow-client.js';
import { createDueWakes } from '../src/events/due-wakes.js';
import { SCOPES } from '../src/security/api-key.js';
import { createDestinationPolicy } from '../src/security/destination-policy.js';
import { createSecretBox } from '../src/security/secret-box.js';
import { startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { projectRoot } from '../dev/tools.js';
import { pct } from './percentile.js';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1_000_000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 300);
const DAYS = 90;
const CHUNK = 100_000;
const DB_NAME = 'bench_stats';

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `p50 ${pct(s, 50).toFixed(2)} ms, p99 ${pct(s, 99).toFixed(2)} ms, max ${s.at(-1)!.toFixed(2)} ms (n=${s.length})`;
};

/** The statement GET /stats ran before migration 0030: the endpoint's deliveries with an attempt in the window, counted. */
const SCAN_BEFORE_ROLLUPS = `WITH win AS (SELECT date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - 23 * interval '1 hour' AS since),
  hours AS (SELECT generate_series(win.since, win.since + 23 * interval '1 hour', interval '1 hour') AS hour FROM win),
  recent AS (
    SELECT a.started_at, a.error FROM deliveries d JOIN delivery_attempts a ON a.delivery_id = d.id, win
    WHERE d.endpoint_id = $2 AND d.account_id = $1 AND d.last_attempt_at >= win.since AND a.started_at >= win.since
  )
  SELECT h.hour, count(r.started_at) FILTER (WHERE r.error IS NULL), count(r.started_at) FILTER (WHERE r.error IS NOT NULL)
  FROM hours h LEFT JOIN recent r ON r.started_at >= h.hour AND r.started_at < h.hour + interval '1 hour'
  GROUP BY h.hour ORDER BY h.hour`;

async function main() {
  const server = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => {} }
    : await startEmbeddedPostgres(path.join(projectRoot, '.data', 'bench-stats'));
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DB_NAME}`);
  const url = new URL(server.url);
  url.pathname = `/${DB_NAME}`;
  await migrate(url.toString());
  const db = createPool(url.toString(), 10);

  const account = await createAccount(db, { name: 'bench-stats', ownerEmail: 'bench@example.com', plan: 'paid' });
  const key = (await issueApiKey(db, { accountId: account.id, environment: 'live', scopes: [...SCOPES] })).key;
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO endpoints (account_id, url, events, secret_ciphertext, health_status, verified_at)
     VALUES ($1, 'https://public.example/hooks', '{crm}', '\\x00', 'healthy', now()) RETURNING id`,
    [account.id],
  );
  const endpointId = rows[0]!.id;

  const t0 = performance.now();
  for (let from = 0; from < DELIVERIES; from += CHUNK) {
    const to = Math.min(DELIVERIES, from + CHUNK) - 1;
    // Delivery i was created (DELIVERIES - i) / DELIVERIES of 90 days ago; its one attempt a second later.
    await db.query(
      `WITH d AS (
         INSERT INTO deliveries (account_id, endpoint_id, event_type, idempotency_key, environment, status, attempts, response_code,
                                 last_attempt_at, created_at, updated_at)
         SELECT $1, $2, 'crm.demand.created', 'bench-' || i, 'live', CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'success' END, 1,
                CASE WHEN i % 10 = 0 THEN 503 ELSE 200 END, t + interval '1 second', t, t + interval '1 second'
         FROM generate_series($3::int, $4::int) AS i, LATERAL (SELECT now() - ($5::int - i) * ($6::float8 / $5::int) * interval '1 day' AS t) AS created
         RETURNING id, created_at, status
       )
       INSERT INTO delivery_attempts (delivery_id, number, started_at, duration_ms, response_code, error)
       SELECT id, 1, created_at + interval '1 second', 20 + (hashtext(id::text) & 255),
              CASE WHEN status = 'failed' THEN 503 ELSE 200 END, CASE WHEN status = 'failed' THEN 'non_2xx' END
       FROM d`,
      [account.id, endpointId, from, to, DELIVERIES, DAYS],
    );
  }
  await db.query(`VACUUM ANALYZE deliveries, delivery_attempts, endpoint_hourly_stats`);
  const counts = await db.query<{ deliveries: number; rollups: number }>(
    `SELECT (SELECT count(*) FROM deliveries)::int AS deliveries, (SELECT count(*) FROM endpoint_hourly_stats)::int AS rollups`,
  );
  console.log(
    `filled in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${counts.rows[0]!.deliveries} deliveries and attempts over ${DAYS} days, ` +
      `${counts.rows[0]!.rollups} hourly rollup rows (one endpoint)`,
  );

  // The API as it serves the route: the stats route never calls Temporal, so its connection stays lazy.
  const policy = createDestinationPolicy({});
  const apiKeys = createApiKeyCache(db);
  await apiKeys.ready;
  const wakes = createDueWakes(db, dueChannel('bench-stats'));
  const httpClient = createHttpClient({ policy, timeoutMs: 10_000 });
  const app = createApp({
    config: { endpointLimit: 50, rateLimit: { capacity: 1_000_000, refillPerSecond: 1_000_000 } },
    db,
    secretBox: createSecretBox(Buffer.alloc(32, 7).toString('base64')),
    policy,
    httpClient,
    workflows: endpointWorkflows(new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) }), 'bench-stats'),
    wakes,
    apiKeys,
    provider: { appSecret: 'bench', verifyToken: 'bench' },
    temporalHealthy: async () => false,
  });
  const http = app.listen(0, '127.0.0.1');
  await new Promise((r) => http.once('listening', r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  const get = async () => {
    const t = performance.now();
    const res = await fetch(`${base}/api/v1/webhooks/${endpointId}/stats`, { headers: { 'x-api-key': key } });
    const body = (await res.json()) as { data: { hours: { successes: number; failures: number }[] } };
    if (res.status !== 200) throw new Error(`stats answered ${res.status}: ${JSON.stringify(body)}`);
    return { ms: performance.now() - t, body };
  };
  for (let i = 0; i < 20; i++) await get();
  const times: number[] = [];
  let last: Awaited<ReturnType<typeof get>>['body'] | undefined;
  for (let i = 0; i < REQUESTS; i++) {
    const r = await get();
    times.push(r.ms);
    last = r.body;
  }
  const day = last!.data.hours.reduce((n, h) => n + h.successes + h.failures, 0);
  console.log(`load average ${fs.readFileSync('/proc/loadavg', 'utf8').trim()}`);
  console.log(`GET /webhooks/{id}/stats (from the rollups, ${day} attempts in its 24 hours): ${summary(times)}`);

  const reads: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const t = performance.now();
    await endpointHourlyStats(db, account.id, endpointId, 24);
    reads.push(performance.now() - t);
  }
  console.log(`its rollups' read alone (endpointHourlyStats, one statement): ${summary(reads)}`);

  const scans: number[] = [];
  for (let i = 0; i < 10; i++) {
    const t = performance.now();
    await db.query(SCAN_BEFORE_ROLLUPS, [account.id, endpointId]);
    scans.push(performance.now() - t);
  }
  console.log(`the scan of its deliveries the route ran before (statement only): ${summary(scans)}`);

  // What each statement reads, which the machine's load does not change: the rollups' 24 rows against the endpoint's history.
  const captured: { text: string; values: unknown[] }[] = [];
  const capture = { query: async (q: { text: string; values: unknown[] }) => (captured.push(q), { rows: [] }) };
  await endpointHourlyStats(capture as unknown as pg.Pool, account.id, endpointId, 24);
  const explained: [string, { text: string; values: unknown[] }][] = [
    ['rollups', captured[0]!],
    ['scan before', { text: SCAN_BEFORE_ROLLUPS, values: [account.id, endpointId] }],
  ];
  for (const [label, q] of explained) {
    const { rows: plan } = await db.query<{ 'QUERY PLAN': [{ 'Execution Time': number; Plan: Record<string, number> }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.text}`,
      q.values,
    );
    const top = plan[0]!['QUERY PLAN'][0];
    const blocks = top.Plan['Shared Hit Blocks']! + top.Plan['Shared Read Blocks']!;
    console.log(`EXPLAIN ANALYZE ${label}: ${top['Execution Time'].toFixed(2)} ms, ${blocks} buffers (8 KiB pages) read`);
  }

  await new Promise((r) => http.close(r));
  http.closeAllConnections();
  await wakes.flush();
  await apiKeys.close();
  await httpClient.close();
  await db.end();
  await admin.query(`DROP DATABASE ${DB_NAME} WITH (FORCE)`);
  await admin.end();
  await server.stop();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
