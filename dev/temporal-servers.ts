/**
 * Starts the two real Temporal servers used outside production: the CLI dev server (with
 * its Web UI, persisted to a SQLite file) and the Java time-skipping test server.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { customSearchAttributes } from '../src/workflows/search-attributes.js';
import { alive, stopChild, tieToParent } from './children.js';
import { freePort, isPortOpen, waitForPort } from './ports.js';
import { ensureTemporalCli, ensureTestServerClasspath } from './tools.js';

export interface RunningServer {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

function cliAttributeType(type: string): string {
  // The CLI spells search attribute types in title case: KEYWORD -> Keyword.
  return type.charAt(0) + type.slice(1).toLowerCase().replace('_list', 'List');
}

/** history.hostLevelCacheMaxSize of the dev server (see its flag below). */
const MUTABLE_STATE_CACHE = 2048;

/**
 * The Go runtime's settings for the server, unless the environment sets them: collect once the heap
 * has grown by half its live size, not by all of it (GOGC=100). At rest the heap stays near its last
 * target, 1.5 times the live heap instead of 2 (with 10,000 endpoint workflows and 8,096 cached
 * mutable states the live heap was 120-150 MB); under load it collects about twice as often, where
 * collection took 1-3 % of its CPU. With the smaller cache below: 0.34 -> 0.25 GiB PSS idle (bench --idle).
 */
function goRuntimeEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { GOGC: '50', ...env };
}

/**
 * `temporal server start-dev` with the Web UI. With a `dbFile` the server persists its
 * state there, so restarting it loses no workflow; without one it runs in memory.
 */
export async function startTemporalDevServer(
  opts: { dbFile?: string; port?: number; uiPort?: number; logFile?: string } = {},
): Promise<RunningServer> {
  const cli = await ensureTemporalCli();
  const port = opts.port ?? (await freePort());
  const uiPort = opts.uiPort ?? (await freePort());
  if (await isPortOpen(port)) throw new Error(`Port ${port} is taken; set TEMPORAL_PORT or TEMPORAL_ADDRESS.`);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--namespace',
    'default',
    '--log-level',
    'error',
    // A workflow task that schedules an activity gets it back in its answer (the SDK asks for it by
    // default), instead of the activity going through matching to a poller: a wake-up's session
    // starts in 0-1 ms instead of 2-8 ms, and costs the server one round trip and one write less.
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
    // Workflows' mutable states the server keeps in memory (the dev server sets 8,096): about 18 KB of Go heap
    // each for an endpoint workflow (measured), more with the collector's headroom. Endpoints busy at once fit
    // many times over; an idle one past it is read back from SQLite on its next wake-up.
    '--dynamic-config-value',
    `history.hostLevelCacheMaxSize=${MUTABLE_STATE_CACHE}`,
  ];
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    // SQLite's default rollback journal copies every page a transaction changes into a journal file first:
    // 38 MB/s written, the server CPU-bound, while 10,000 endpoint workflows started (bench --idle). The
    // write-ahead log appends each page once; synchronous stays FULL, so a commit is on disk when it returns.
    args.push('--db-filename', opts.dbFile, '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=FULL');
  }
  for (const key of customSearchAttributes) args.push('--search-attribute', `${key.name}=${cliAttributeType(key.type)}`);
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const child = tieToParent(spawn(cli, args, { stdio: ['ignore', out, out], env: goRuntimeEnv() }));
  await waitForPort(port, 'Temporal dev server', 120_000, alive(child)).catch(async (err: unknown) => {
    await stopChild(child);
    throw err;
  });
  return { address: `127.0.0.1:${port}`, uiUrl: `http://127.0.0.1:${uiPort}`, stop: () => stopChild(child) };
}

/**
 * The Java time-skipping test server. It starts "locked" (time skipping off until a test
 * environment unlocks it), which is what the SDK's TestWorkflowEnvironment expects.
 */
export async function startTimeSkippingTestServer(opts: { port?: number; logFile?: string } = {}): Promise<RunningServer> {
  const classpath = await ensureTestServerClasspath();
  const port = opts.port ?? (await freePort());
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const child = tieToParent(
    spawn(
      'java',
      ['-Xms64m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-cp', classpath, 'io.temporal.testserver.TestServer', String(port)],
      {
        stdio: ['ignore', out, out],
      },
    ),
  );
  await waitForPort(port, 'Temporal time-skipping test server', 120_000, alive(child)).catch(async (err: unknown) => {
    await stopChild(child);
    throw err;
  });
  return { address: `127.0.0.1:${port}`, stop: () => stopChild(child) };
}
