/**
 * `npm start` listens on this machine only unless HOST says otherwise. It runs as a person runs
 * it (dev/start.ts, the npm script's command), against the test run's Postgres (a database of its
 * own) and Temporal dev server. Loopback only shows as 127.0.0.1 answering and 127.0.0.2 (also
 * this machine, but another address) refusing; a server on every interface answers on both. Its
 * worker runs in a process of its own beside the API's.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort, isPortOpen } from '../../dev/ports.js';
import { startShell } from '../support/readme-shell.js';
import { ownDatabase, type OwnDatabase } from '../support/own-database.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
let database: OwnDatabase;
let dataDir: string;

beforeAll(async () => {
  database = await ownDatabase('dev_start_host');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-start-host-'));
});
afterAll(async () => {
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** `npm start` with HOST as given (unset when undefined), until its API listens; then Ctrl-C. */
async function devStart(host: string | undefined, check: (port: number, output: string) => Promise<void>) {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    TEMPORAL_ADDRESS: inject('devServerAddress'),
    TEMPORAL_TASK_QUEUE: `dev-start-host-${port}`,
    MAINTENANCE_SCHEDULE: 'false',
    DATA_DIR: dataDir,
    PORT: String(port),
    LOCAL_PROVIDER_PORT: String(await freePort()),
    LOG_LEVEL: 'warn',
  };
  delete env.HOST;
  if (host !== undefined) env.HOST = host;
  const shell = startShell('exec npm start', env, ROOT);
  try {
    await shell.waitFor(/^API: .*$/m, 120_000);
    await check(port, shell.output());
  } finally {
    shell.signal('SIGINT');
    await shell.exited;
  }
}

/** Processes running the worker's source whose environment names `port`: this `npm start`'s worker (Linux /proc). */
function workerProcessesOf(port: number): number[] {
  const pids: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)))
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes('src/worker/main.ts')) continue;
      if (fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`PORT=${port}`)) pids.push(Number(pid));
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  return pids;
}

describe('npm start: where the API listens', () => {
  it('without HOST, on 127.0.0.1 only: another address of this machine (127.0.0.2) is refused, and it says so', async () => {
    await devStart(undefined, async (port, output) => {
      expect(await isPortOpen(port, '127.0.0.1')).toBe(true);
      expect(await isPortOpen(port, '127.0.0.2')).toBe(false);
      expect(output).toMatch(new RegExp(`API: +http://localhost:${port} .*listening on 127\\.0\\.0\\.1, this machine only`));
    });
  }, 150_000);

  it.runIf(process.platform === 'linux')(
    'runs the worker in a process of its own beside the API (two cores)',
    async () => {
      await devStart(undefined, async (port) => {
        const workers = workerProcessesOf(port);
        // In one process (before issue #27) no process ran the worker's source at all: it ran inside dev/start.ts.
        expect(workers).toHaveLength(1);
      });
    },
    150_000,
  );

  it('HOST=0.0.0.0 listens on every interface: 127.0.0.2 is answered too', async () => {
    await devStart('0.0.0.0', async (port, output) => {
      expect(await isPortOpen(port, '127.0.0.1')).toBe(true);
      expect(await isPortOpen(port, '127.0.0.2')).toBe(true);
      expect(output).toMatch(/listening on 0\.0\.0\.0\)/);
    });
  }, 150_000);
});
