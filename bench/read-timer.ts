/**
 * GETs one at a time, timed from a process of their own. The benchmark's process is the API
 * cluster's primary (it accepts each connection and carries both API processes' logs to their
 * files) and holds the fill's state: reads timed there counted its own work and collections in
 * their p99 (a 100-item stream page: 12–19 ms there, 5–7 ms from a process of its own, 29 Nov).
 *
 * The parent forks this file; the child answers each request with the times of its reads.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

interface TimeRequest {
  id: number;
  paths: string[];
  key: string;
  /** Reads before the timed ones, not counted (connection, plans, pages). */
  warm: number;
  n: number;
}
type TimeAnswer = { id: number; ms: number[] } | { id: number; error: string };

export interface ReadTimer {
  /** `warm` reads of `paths` in turn, then `n` timed ones, each to its answer's last byte: their times in ms. */
  time(paths: string[], key: string, opts: { warm: number; n: number }): Promise<number[]>;
  stop(): Promise<void>;
}

export async function startReadTimer(baseUrl: string): Promise<ReadTimer> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [baseUrl], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_READ_TIMER: 'child' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the read timer exited (${code}) before it was ready`)));
  });
  const waiting = new Map<number, { resolve: (ms: number[]) => void; reject: (err: Error) => void }>();
  child.on('message', (m: TimeAnswer) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if ('error' in m) w?.reject(new Error(m.error));
    else w?.resolve(m.ms);
  });
  child.on('exit', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`the read timer exited (${code})`));
    waiting.clear();
  });
  let next = 0;
  return {
    time: (paths, key, opts) =>
      new Promise((resolve, reject) => {
        const id = next++;
        waiting.set(id, { resolve, reject });
        child.send({ id, paths, key, warm: opts.warm, n: opts.n } satisfies TimeRequest);
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.disconnect();
      await exited;
    },
  };
}

async function serve(baseUrl: string): Promise<void> {
  // One connection: the reads are sequential, and each is timed on a connection already open.
  const pool = new Pool(baseUrl, { connections: 1 });
  const read = async (path: string, key: string) => {
    const res = await pool.request({ method: 'GET', path, headers: { 'x-api-key': key } });
    if (res.statusCode !== 200) throw new Error(`GET ${path} answered ${res.statusCode} ${await res.body.text()}`);
    for await (const chunk of res.body) void chunk;
  };
  process.on('message', (m: TimeRequest) => {
    void (async () => {
      try {
        for (let i = 0; i < m.warm; i++) await read(m.paths[i % m.paths.length]!, m.key);
        const ms: number[] = [];
        for (let i = 0; i < m.n; i++) {
          const t0 = performance.now();
          await read(m.paths[i % m.paths.length]!, m.key);
          ms.push(performance.now() - t0);
        }
        process.send!({ id: m.id, ms } satisfies TimeAnswer);
      } catch (err) {
        process.send!({ id: m.id, error: (err as Error).message } satisfies TimeAnswer);
      }
    })();
  });
  process.once('disconnect', () => void pool.close().then(() => process.exit(0)));
  process.send!('ready');
}

if (process.env.BENCH_READ_TIMER === 'child') await serve(process.argv[2]!);
