/**
 * Child processes of the benchmark (the production API and worker entry points, the receiver)
 * and what the kernel says each process tree spent in CPU.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tieToParent } from '../dev/children.js';
import { projectRoot } from '../dev/tools.js';

export interface Service {
  name: string;
  child: ChildProcess;
  /** SIGTERM (graceful: the API closes, the worker drains), SIGKILL after 20 s. */
  stop(): Promise<void>;
}

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

/**
 * `node --import tsx <entry>`: what `npm run api` / `npm run worker` run (they go through the
 * tsx CLI, which adds a wrapper process; this keeps the profiled process the service itself).
 * Resolves once a line of its output contains `ready`. Output goes to `logFile`.
 */
export async function startService(opts: {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  nodeArgs?: string[];
  logFile: string;
  ready: string;
  ipc?: boolean;
  timeoutMs?: number;
}): Promise<Service> {
  const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', path.join(projectRoot, opts.entry)], {
    cwd: projectRoot,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe', ...(opts.ipc ? (['ipc'] as const) : [])],
  });
  // A service outlives no benchmark, even one that crashed.
  tieToParent(child);
  let tail = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${opts.name} not ready within ${(opts.timeoutMs ?? 120_000) / 1000} s; see ${opts.logFile}`)),
      opts.timeoutMs ?? 120_000,
    );
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      tail = (tail + chunk.toString()).slice(-4096);
      if (tail.includes(opts.ready)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${opts.name} exited (${code ?? signal}) before it was ready:\n${tail}`));
    });
  });
  return {
    name: opts.name,
    child,
    stop: () =>
      new Promise((resolve) => {
        if (exited(child)) return resolve();
        const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
        child.once('exit', () => {
          clearTimeout(force);
          log.end();
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime + cutime + cstime, in clock ticks */
  ticks: number;
  ownTicks: number;
}

const TICKS_PER_SECOND = 100;

function readProcs(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const f = text.slice(close + 2).split(' ');
    // Fields from `state` (3rd in proc(5)): ppid is f[1], utime f[11], stime f[12], cutime f[13], cstime f[14].
    const own = Number(f[11]) + Number(f[12]);
    out.set(Number(entry), { pid: Number(entry), ppid: Number(f[1]), comm, ownTicks: own, ticks: own + Number(f[13]) + Number(f[14]) });
  }
  return out;
}

/**
 * CPU seconds used so far by each named process tree (a tree's reaped children included),
 * and by this process itself (its children are other entries).
 */
export function cpuSeconds(roots: Record<string, number | undefined>): Record<string, number> {
  const procs = readProcs();
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const tree = (pid: number): number => (procs.get(pid)?.ticks ?? 0) + (children.get(pid) ?? []).reduce((sum, c) => sum + tree(c), 0);
  const out: Record<string, number> = { bench: (procs.get(process.pid)?.ownTicks ?? 0) / TICKS_PER_SECOND };
  for (const [name, pid] of Object.entries(roots)) out[name] = pid ? tree(pid) / TICKS_PER_SECOND : 0;
  return out;
}

/** The pid of this process's direct child running `comm` (the servers started by dev/ helpers do not expose theirs). */
export function childPid(comm: string): number | undefined {
  for (const p of readProcs().values()) if (p.ppid === process.pid && p.comm === comm) return p.pid;
  return undefined;
}

/**
 * Memory of each named process tree now, in bytes: RSS summed over its processes (counts memory
 * they share, such as Postgres' shared buffers, once per process) and PSS (shared pages split
 * between their users: the sum that adds up).
 */
export function treeMemory(roots: Record<string, number | undefined>): Record<string, { rss: number; pss: number }> {
  const procs = readProcs();
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const field = (pid: number, name: string) => {
    try {
      const m = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8').match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'));
      return m ? Number(m[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  };
  const tree = (pid: number): number[] => [pid, ...(children.get(pid) ?? []).flatMap(tree)];
  const out: Record<string, { rss: number; pss: number }> = {};
  for (const [name, root] of Object.entries(roots)) {
    const pids = root ? tree(root) : [];
    out[name] = { rss: pids.reduce((s, p) => s + field(p, 'Rss'), 0), pss: pids.reduce((s, p) => s + field(p, 'Pss'), 0) };
  }
  return out;
}
