/**
 * The compiled API and worker processes of the production shape. The API processes are a
 * node:cluster sharing one port (Node 20 has no reusePort), round robin: the primary accepts each
 * connection and hands it to the next API process. It stays out of the requests themselves
 * (keep-alive connections carry many), and with SCHED_NONE the kernel gave most of 16 publishers'
 * connections to one process (1,013 against 311 requests in one run). Worker processes are plain children.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { managedProcess, type ManagedProcess } from './children.js';
import { projectRoot } from './tools.js';

export const distDir = path.join(projectRoot, 'dist');

/** The compiled entry of `name`, or an error that says to build first. */
export function compiledEntry(name: 'api' | 'worker'): string {
  const entry = path.join(distDir, 'src', name, 'main.js');
  if (!fs.existsSync(entry) || !fs.existsSync(path.join(distDir, 'workflow-bundle.js')))
    throw new Error(
      `${path.relative(projectRoot, entry)} is missing: run \`npm run build\` first (the production shape runs the compiled code).`,
    );
  return entry;
}

/** Where a child's output goes: a log file of its own, or this process's stdout/stderr. */
export type LogTarget = { file: string } | 'inherit';

function pipeOutput(out: { stdout: Readable | null; stderr: Readable | null }, target: LogTarget): void {
  const sink = target === 'inherit' ? undefined : fs.createWriteStream(target.file, { flags: 'a' });
  out.stdout?.pipe(sink ?? process.stdout, { end: false });
  out.stderr?.pipe(sink ?? process.stderr, { end: false });
}

function exitedError(what: string, child: ChildProcess): Error {
  return new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before it was ready; see its log`);
}

export interface ProcessOptions {
  name: string;
  env: NodeJS.ProcessEnv;
  log: LogTarget;
  /** Start it again when it crashes (children.ts managedProcess). */
  respawn?: { say: (line: string) => void };
  /** The TypeScript source through tsx (`npm start`), not the compiled code. Workers only. */
  source?: boolean;
  /** Node's own flags for the process (a benchmark's `--cpu-prof`). */
  nodeArgs?: string[];
}

/** What API and worker processes share: a restart overlaps (the new one ready first), 30 s to finish, a crash respawned when asked. */
const rollingService = (opts: ProcessOptions) => ({ name: opts.name, overlap: true, graceMs: 30_000, respawn: opts.respawn });

/**
 * Forks one API process of the cluster. With SCHED_RR the primary hands each connection it accepted
 * to a worker and keeps its own copy open until the worker answers that it took it (Node 20's
 * lib/internal/cluster/round_robin_handle.js closes it only in that answer's callback). A worker
 * killed between the handoff and its answer never answers, and nothing else closes that copy: the
 * client's request hangs until the client's own timeout (undici's: 300 s). So the connections a
 * worker had not yet taken are closed when it exits: the client gets a reset at once, for a request
 * no process has read, and can retry it. This follows the cluster's internal messages ('newconn'
 * with a seq, answered by 'ack' with that seq); test/cluster/cluster-worker-kill.test.ts fails if
 * they change under it.
 */
export function forkClusterWorker(env: NodeJS.ProcessEnv): ClusterWorker {
  const worker = cluster.fork(env);
  const proc = worker.process;
  const untaken = new Map<number, { close(): void }>();
  type ClusterMessage = { cmd?: string; act?: string; seq?: number; ack?: number } | null;
  const send = proc.send.bind(proc) as (message: unknown, handle?: unknown, ...rest: unknown[]) => boolean;
  proc.send = ((message: ClusterMessage, handle?: { close(): void }, ...rest: unknown[]) => {
    if (message?.cmd === 'NODE_CLUSTER' && message.act === 'newconn' && handle && typeof message.seq === 'number')
      untaken.set(message.seq, handle);
    return send(message, handle, ...rest);
  }) as typeof proc.send;
  proc.on('internalMessage', (message: ClusterMessage) => {
    if (message?.cmd === 'NODE_CLUSTER' && typeof message.ack === 'number') untaken.delete(message.ack);
  });
  worker.once('exit', () => {
    for (const handle of untaken.values()) handle.close();
    untaken.clear();
  });
  return worker;
}

let clusterReady = false;
const clusterWorkers = new WeakMap<ChildProcess, ClusterWorker>();

/**
 * One API process of the cluster; ready once it listens on PORT: any other server of the process
 * listening through the cluster (all but `exclusive` ones) is reported to the primary the same way,
 * as the warm-up's loopback server was. A restart overlaps: the new one listens before the old one stops.
 */
export function apiProcess(opts: ProcessOptions): ManagedProcess {
  const entry = compiledEntry('api');
  if (!clusterReady) {
    cluster.schedulingPolicy = cluster.SCHED_RR;
    cluster.setupPrimary({ exec: entry, execArgv: [], args: [], silent: true });
    clusterReady = true;
  }
  return managedProcess({
    ...rollingService(opts),
    launch: () => {
      // Settings of the cluster apply to the workers forked after them: each process its own flags.
      cluster.setupPrimary({ execArgv: opts.nodeArgs ?? [] });
      const worker = forkClusterWorker(opts.env);
      pipeOutput(worker.process, opts.log);
      clusterWorkers.set(worker.process, worker);
      return worker.process;
    },
    ready: (child) =>
      new Promise<void>((resolve, reject) => {
        const worker = clusterWorkers.get(child)!;
        const onExit = () => {
          worker.off('listening', onListening);
          reject(exitedError(opts.name, child));
        };
        const onListening = (address: { port: number }) => {
          if (address.port !== Number(opts.env.PORT)) return;
          child.off('exit', onExit);
          worker.off('listening', onListening);
          resolve();
        };
        child.once('exit', onExit);
        worker.on('listening', onListening);
      }),
  });
}

/** One worker process; ready once it says it polls (over IPC, src/worker/main.ts). A restart overlaps like the API's. */
export function workerProcess(opts: ProcessOptions): ManagedProcess {
  const entry = opts.source ? ['--import', 'tsx', path.join(projectRoot, 'src', 'worker', 'main.ts')] : [compiledEntry('worker')];
  const args = [...(opts.nodeArgs ?? []), ...entry];
  return managedProcess({
    ...rollingService(opts),
    launch: () => {
      const child = spawn(process.execPath, args, { env: opts.env, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
      pipeOutput(child, opts.log);
      return child;
    },
    ready: (child) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`${opts.name} did not start polling within 120 s`)), 120_000);
        const onExit = () => done(exitedError(opts.name, child));
        const onMessage = (m: unknown) => (m as { type?: string } | null)?.type === 'worker-running' && done();
        const done = (err?: Error) => {
          clearTimeout(timer);
          child.off('exit', onExit);
          child.off('message', onMessage);
          if (err) reject(err);
          else resolve();
        };
        child.once('exit', onExit);
        child.on('message', onMessage);
      }),
  });
}
