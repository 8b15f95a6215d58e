/**
 * Ctrl-C reaches every process of the terminal's foreground group at once: Postgres and the
 * Temporal dev server would stop under the running API and worker. So `npm start` runs the
 * service in a process group of its own, children included, and this parent only forwards the
 * signals it gets, so the service stops its parts in order. `npm start` runs
 * `exec node --import tsx` rather than the tsx CLI: the CLI gives its child 30 ms to acknowledge
 * a signal, then SIGKILLs it and exits 130, which a loaded machine missed.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';

const FLAG = 'WEBHOOKS_START_OWN_GROUP';

/**
 * In the parent: starts this same program detached and returns true (the caller does nothing
 * else; the process exits with the child's code). In the child, or on Windows: false.
 */
export function runInOwnProcessGroup(): boolean {
  if (process.env[FLAG] === '1' || process.platform === 'win32') return false;
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    // The IPC channel closes when this parent dies, however it dies: the child then stops too.
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, [FLAG]: '1' },
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
  return true;
}

/** In the child: `stop` runs when the parent goes away without a signal (killed, its terminal closed). */
export function onParentGone(stop: () => void): void {
  if (process.env[FLAG] !== '1' || !process.send) return;
  process.on('disconnect', stop);
}
