/**
 * Starts the real components once per test run: PostgreSQL (embedded unless
 * DATABASE_URL is given), the Temporal dev server (in memory), the jars of the Java
 * time-skipping test server, a bundle of the workflow code, and a private CA for local HTTPS
 * receivers.
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { startEmbeddedPostgres } from '../../dev/embedded-postgres.js';
import { makeLocalTls } from '../../dev/tls.js';
import { startTemporalDevServer } from '../../dev/temporal-servers.js';
import { ensureTestServerClasspath, projectRoot } from '../../dev/tools.js';
import { workflowsPath } from '../../src/worker/create-worker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    devServerAddress: string;
    workflowBundlePath: string;
    tls: { caFile: string; cert: string; key: string };
  }
}

const workDir = path.join(projectRoot, '.data', 'test');

function makeTls() {
  return makeLocalTls(path.join(workDir, 'tls'), 'webhook-platform test', ['receiver.test', '*.receiver.test']);
}

/** Leftovers of runs that never cleaned up are dropped once they are this old; a live run is younger. */
const LEFTOVER_MS = 24 * 60 * 60 * 1000;

/**
 * A fresh database per run on the shared server, so runs never see each other's rows. Its
 * name carries its creation time: concurrent runs on one server drop only their own database
 * (at teardown) and leftovers older than a day, never another run's.
 */
async function freshDatabase(serverUrl: string): Promise<string> {
  const name = `test_${Date.now()}_${crypto.randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname ~ '^test_[0-9]+_[0-9a-f]+$'`);
    for (const { datname } of rows) {
      const createdAtMs = Number(datname.split('_')[1]);
      if (Date.now() - createdAtMs > LEFTOVER_MS) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => {});
    }
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Newest modification time under a folder (0 when it does not exist). */
function newestMtime(dir: string): number {
  if (!fs.existsSync(dir)) return 0;
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/**
 * Tests that run `npx webhooks` (as the READMEs do) run the packages' built JavaScript: a source
 * edited since the last `npm install` would otherwise be tested as its old build.
 */
function buildStalePackages(): void {
  const stale = ['sdk', 'cli', 'mcp'].some((name) => {
    const dir = path.join(projectRoot, 'packages', name);
    return newestMtime(path.join(dir, 'src')) > newestMtime(path.join(dir, 'dist'));
  });
  if (stale) execFileSync('npm', ['run', '--silent', 'build:packages'], { cwd: projectRoot, stdio: 'ignore' });
}

export default async function setup(project: TestProject) {
  fs.mkdirSync(workDir, { recursive: true });
  buildStalePackages();
  const log = path.join(workDir, 'servers.log');
  const started = Date.now();
  const [postgres, devServer, , tls, bundle] = await Promise.all([
    process.env.DATABASE_URL
      ? Promise.resolve({ url: process.env.DATABASE_URL, stop: async () => {} })
      : startEmbeddedPostgres(path.join(workDir, 'pg')),
    startTemporalDevServer({ logFile: log }),
    // Workflow test files start their own time-skipping servers; fetch the jars once, here.
    ensureTestServerClasspath(),
    makeTls(),
    bundleWorkflowCode({
      workflowsPath,
      logger: { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never,
    }),
  ]);
  const databaseUrl = await freshDatabase(postgres.url);
  await migrate(databaseUrl);
  const workflowBundlePath = path.join(workDir, 'workflow-bundle.js');
  fs.writeFileSync(workflowBundlePath, bundle.code);
  process.env.NODE_EXTRA_CA_CERTS = tls.caFile;
  process.stderr.write(`test components ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

  project.provide('databaseUrl', databaseUrl);
  project.provide('devServerAddress', devServer.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('tls', tls);

  return async () => {
    await devServer.stop();
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin
      .connect()
      .then(() => admin.query(`DROP DATABASE IF EXISTS "${new URL(databaseUrl).pathname.slice(1)}" WITH (FORCE)`))
      .catch(() => {});
    await admin.end().catch(() => {});
    await postgres.stop();
  };
}
