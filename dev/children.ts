/** The child-process chores the local launchers share: stopping in time, dying with the parent, liveness. */
import type { ChildProcess } from 'node:child_process';

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export function stopChild(child: ChildProcess, graceMs = 10_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const force = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill(signal);
  });
}

/** A server outlives no parent: if this process dies, so does the child. */
export function tieToParent(child: ChildProcess): ChildProcess {
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  return child;
}

export function alive(child: ChildProcess): () => boolean {
  return () => child.exitCode === null && child.signalCode === null;
}

/** One supervised process of a launcher: started, killed hard, restarted, stopped, by handle. */
export interface ManagedProcess {
  readonly name: string;
  /** The running process's id, undefined while none runs. */
  readonly pid: number | undefined;
  start(): Promise<void>;
  /** kill -9, as a crash would; resolves once it is gone. */
  kill9(): Promise<void>;
  /**
   * A graceful restart. With `overlap` the replacement starts and is ready before the old one
   * gets SIGTERM (a rolling restart: the service never has one fewer process); otherwise stop, then start.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export function managedProcess(opts: {
  name: string;
  launch: () => ChildProcess;
  ready: (child: ChildProcess) => Promise<void>;
  overlap?: boolean;
  graceMs?: number;
}): ManagedProcess {
  let current: ChildProcess | undefined;
  const launchReady = async () => {
    const child = tieToParent(opts.launch());
    try {
      await opts.ready(child);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    return child;
  };
  return {
    name: opts.name,
    get pid() {
      return current && alive(current)() ? current.pid : undefined;
    },
    async start() {
      current = await launchReady();
    },
    async kill9() {
      if (current) await stopChild(current, 0, 'SIGKILL');
    },
    async restart() {
      const old = current;
      if (opts.overlap) {
        current = await launchReady();
        if (old) await stopChild(old, opts.graceMs);
        return;
      }
      if (old) await stopChild(old, opts.graceMs);
      current = await launchReady();
    },
    async stop() {
      if (current) await stopChild(current, opts.graceMs);
    },
  };
}
