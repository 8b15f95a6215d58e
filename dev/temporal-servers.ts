/**
 * Starts the two real Temporal servers used outside production: the CLI dev server (with
 * its Web UI, persisted to a SQLite file) and the Java time-skipping test server.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { customSearchAttributes } from '../workflows/search-attributes.js';
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
  ];
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile);
  }
  for (const key of customSearchAttributes) args.push('--search-attribute', `${key.name}=${cliAttributeType(key.type)}`);
  const out = opts.logFile ? fs.openSync(opts.logFile, 'a') : 'ignore';
  const child = tieToParent(spawn(cli, args, { stdio: ['ignore', out, out] }));
  await waitForPort(port, 'Temporal dev server', 120_000, alive(child));
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
  await waitForPort(port, 'Temporal time-skipping test server', 120_000, alive(child));
  return { address: `127.0.0.1:${port}`, stop: () => stopChild(child) };
}
