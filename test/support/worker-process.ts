/**
 * The production worker (runWorker) in a child process on the dev server, so a test can kill
 * it with SIGKILL mid-round, as a crashed machine would stop it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { TEST_ENCRYPTION_KEY } from './harness.js';

const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker-process-main.ts');

export interface WorkerProcess {
  child: ChildProcess;
  /** When the worker said it was polling. */
  readyAtMs: number;
  kill(): Promise<void>;
}

/** `env`: settings beside the test's (e.g. DIRECT_SESSIONS=false). */
export async function startWorkerProcess(taskQueue: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: {
      ...process.env,
      VITEST: '',
      LOG_LEVEL: 'info',
      DATABASE_URL: inject('databaseUrl'),
      TEMPORAL_ADDRESS: inject('devServerAddress'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      // Test files share one database: a sweep would wake other files' endpoints on this task queue.
      DUE_SWEEP_MS: '0',
      // Speed only: a restarted worker would warm up before it polls (test/support/running-service.ts).
      WARM_UP_REQUESTS: '0',
      // Nor may a maintenance run (one Schedule per namespace) touch other files' photoapp tokens.
      MAINTENANCE_SCHEDULE: 'false',
      SECRETS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      WEBHOOK_ALLOW_PRIVATE_CIDRS: '127.0.0.0/8',
      NODE_EXTRA_CA_CERTS: inject('tls').caFile,
      WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const readyAtMs = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker process did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"worker started"')) {
        clearTimeout(timer);
        resolve(Date.now());
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker process exited (${code}):\n${output}`));
    });
  });
  return {
    child,
    readyAtMs,
    kill: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}
