import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export function isPortOpen(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Polls until the server just spawned listens on the port; slow JVM and first-run starts get a
 * generous deadline. Called right after the spawn, before the child can have bound anything: a
 * port already open is another process's, and waiting would take that server for ours (a
 * time-skipping test server that never started answers as another test's real Temporal server).
 */
export async function waitForPort(port: number, what: string, timeoutMs = 120_000, isAlive: () => boolean = () => true): Promise<void> {
  if (await isPortOpen(port)) throw new Error(`port ${port} is already in use by another process: ${what} cannot listen there`);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await isPortOpen(port)) return;
    if (!isAlive()) throw new Error(`${what} exited before listening on port ${port}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not listen on port ${port} within ${timeoutMs / 1000} s`);
}

/** Polls until `url` answers HTTP/1.1 (any status below 500): a port merely open could be another server's. */
export async function waitForHttp(url: string, what: string, timeoutMs = 60_000, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answered = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      .then(async (res) => (await res.arrayBuffer(), res.status < 500))
      .catch(() => false);
    if (answered) return;
    if (!isAlive()) throw new Error(`${what} exited before answering at ${url}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} did not answer at ${url} within ${timeoutMs / 1000} s`);
}

/**
 * Ports handed out on this machine and not yet listened on: one file per port, naming the process
 * that took it. A bind check alone cannot see them: two launches (test files run side by side, or
 * the ten ports of one Temporal cluster) could each find the same port free and the later
 * starter would meet the other's server there. CI met that: the Web UI's port answered HTTP/2,
 * a Temporal frontend started on it first.
 */
const RESERVATIONS = path.join(os.tmpdir(), 'webhook-platform-ports');
const reservedHere = new Set<number>();
let releasesAtExit = false;

/**
 * A process as `pid start-time`: a reservation outlives a process killed before its exit handler
 * ran, and its pid is soon another process's (pid_max is 32,768 on many kernels). The start time
 * (clock ticks since boot, /proc/<pid>/stat's 22nd field) tells them apart; without /proc, the pid alone.
 */
function identity(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${pid} ${stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]}`;
  } catch {
    return fs.existsSync('/proc/self/stat') ? undefined : isAlive(pid) ? String(pid) : undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Gives back every port this process reserved: done at exit, or sooner by a process done with them. */
export function releaseFreePorts(): void {
  for (const port of reservedHere) fs.rmSync(path.join(RESERVATIONS, String(port)), { force: true });
  reservedHere.clear();
}

/** True when this process now holds the port's reservation; one left by a process that is gone is taken over. */
function reserve(port: number): boolean {
  const file = path.join(RESERVATIONS, String(port));
  const me = identity(process.pid) ?? String(process.pid);
  for (let tries = 0; tries < 2; tries++) {
    try {
      if (!releasesAtExit) {
        fs.mkdirSync(RESERVATIONS, { recursive: true, mode: 0o1777 });
        process.once('exit', releaseFreePorts);
        releasesAtExit = true;
      }
      fs.writeFileSync(file, me, { flag: 'wx' });
      reservedHere.add(port);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Not a folder this user may write (another user's): go on with the bind check alone.
      if (code !== 'EEXIST') return code === 'EACCES' || code === 'EPERM';
      const owner = fs.readFileSync(file, 'utf8');
      const pid = Number(owner.split(' ')[0]);
      if (owner === me || (pid > 0 && identity(pid) === owner)) return false;
      fs.rmSync(file, { force: true });
    }
  }
  return false;
}

function release(port: number): void {
  if (reservedHere.delete(port)) fs.rmSync(path.join(RESERVATIONS, String(port)), { force: true });
}

/** A loopback port in [min, max) that is free now and handed to no other caller on this machine. */
async function freePortInRange(min: number, max: number): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = min + Math.floor(Math.random() * (max - min));
    if (!reserve(port)) continue;
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
    release(port);
  }
  throw new Error(`no free port in [${min}, ${max})`);
}

/**
 * A free loopback port, below the kernel's ephemeral range (32768 and up): the port is listened on
 * later (a child still starting, a command run after others), and one the kernel handed out
 * (listen on port 0) could meanwhile go to any outgoing connection or other server. The README
 * test met that: its listen port, taken so before `npm start` came up, was answering plain HTTP.
 * Below 32768 also suits a server that keeps its ports as smallint (Temporal's membership table).
 * It stays reserved for this process until it exits.
 */
export function freePort(): Promise<number> {
  return freePortInRange(20_000, 32_000);
}

/** `wanted` when nothing listens there yet, else undefined (the caller then takes a free port). */
export async function preferredPort(wanted: number): Promise<number | undefined> {
  return (await isPortOpen(wanted)) ? undefined : wanted;
}
