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

/** The children still running that die with this process; one 'exit' listener for all of them (one each passed Node's limit of 10). */
const tied = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of tied) child.kill('SIGKILL');
});

/** A server outlives no parent: if this process dies, so does the child. */
export function tieToParent(child: ChildProcess): ChildProcess {
  tied.add(child);
  child.once('exit', () => tied.delete(child));
  return child;
}

export function alive(child: ChildProcess): () => boolean {
  return () => child.exitCode === null && child.signalCode === null;
}

/** One supervised process of a launcher: started, killed hard, restarted, stopped, by handle. */
export interface ManagedProcess {
  readonly name: string;
  /** The running process's id, undefined while none runs (and while a replacement starts). */
  readonly pid: number | undefined;
  start(): Promise<void>;
  /**
   * kill -9, as a crash would (a supervised process is then started again after its backoff, and
   * not before `holdDown` settles: a test keeps it down while it watches the rest carry on);
   * resolves once it is gone.
   */
  kill9(o?: { holdDown?: Promise<unknown> }): Promise<void>;
  /**
   * A graceful restart. With `overlap` the replacement starts and is ready before the old one
   * gets SIGTERM (a rolling restart: the service never has one fewer process); otherwise stop, then start.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A crashed process is started again after this long, doubled at each crash in a row up to the maximum. */
export const RESPAWN_FIRST_MS = 1_000;
export const RESPAWN_MAX_MS = 30_000;
/** Up this long, a process's next crash is a first one again. */
export const RESPAWN_STABLE_MS = 60_000;

/**
 * The supervisor's waits: 1 s, doubled at each crash or failed start in a row up to 30 s, 1 s again
 * after a run of a minute. Pure but for the clock, which a test hands in.
 */
export class RespawnBackoff {
  private nextMs = RESPAWN_FIRST_MS;

  constructor(private readonly now: () => number = Date.now) {}

  /** The wait before starting again a process that ran since `upSince` (a `now()` reading) and crashed. */
  afterCrash(upSince: number): number {
    if (this.now() - upSince >= RESPAWN_STABLE_MS) this.nextMs = RESPAWN_FIRST_MS;
    return this.take();
  }

  /** The wait before the next try when a start failed (it never ran, so no reset). */
  afterFailedStart(): number {
    return this.take();
  }

  private take(): number {
    const wait = this.nextMs;
    this.nextMs = Math.min(this.nextMs * 2, RESPAWN_MAX_MS);
    return wait;
  }
}

export interface ManagedProcessOptions {
  name: string;
  launch: () => ChildProcess;
  ready: (child: ChildProcess) => Promise<void>;
  overlap?: boolean;
  graceMs?: number;
  /** What a stop sends first (SIGTERM unless set; Postgres's fast shutdown is SIGINT). */
  stopSignal?: NodeJS.Signals;
  /**
   * Supervise: a process that exits on its own (a crash, an OOM kill, kill -9 from outside) is
   * started again after a backoff, as systemd or Kubernetes would; `say` tells each exit and return.
   */
  respawn?: { say: (line: string) => void };
}

export function managedProcess(opts: ManagedProcessOptions): ManagedProcess {
  return new SupervisedProcess(opts);
}

class SupervisedProcess implements ManagedProcess {
  private current: ChildProcess | undefined;
  private stopped = false;
  private respawnTimer: NodeJS.Timeout | undefined;
  private readonly backoff = new RespawnBackoff();
  /** Exits this handle asked for (stop, restart): not crashes. */
  private readonly asked = new WeakSet<ChildProcess>();
  /** Set by kill9's holdDown: the respawn of the process it killed waits for it. */
  private holdDown: Promise<unknown> | undefined;

  constructor(private readonly opts: ManagedProcessOptions) {}

  get name() {
    return this.opts.name;
  }

  get pid() {
    return this.current && alive(this.current)() ? this.current.pid : undefined;
  }

  async start() {
    this.stopped = false;
    clearTimeout(this.respawnTimer);
    this.current = await this.launchReady();
  }

  async kill9(o?: { holdDown?: Promise<unknown> }) {
    this.holdDown = o?.holdDown;
    if (this.current) await stopChild(this.current, 0, 'SIGKILL');
  }

  async restart() {
    clearTimeout(this.respawnTimer);
    const old = this.current;
    if (this.opts.overlap) {
      this.current = await this.launchReady();
      if (old) await this.stopAsked(old);
      return;
    }
    if (old) await this.stopAsked(old);
    this.current = await this.launchReady();
  }

  async stop() {
    this.stopped = true;
    clearTimeout(this.respawnTimer);
    if (this.current) await this.stopAsked(this.current);
  }

  private async launchReady(): Promise<ChildProcess> {
    const child = tieToParent(this.opts.launch());
    try {
      await this.opts.ready(child);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    const startedAt = Date.now();
    if (this.opts.respawn) child.once('exit', (code, signal) => this.crashed(child, startedAt, signal ?? `code ${code}`));
    return child;
  }

  private stopAsked(child: ChildProcess): Promise<void> {
    this.asked.add(child);
    return stopChild(child, this.opts.graceMs, this.opts.stopSignal);
  }

  /** Unless it was asked to exit, or was replaced meanwhile: a new process after the backoff, tried until one starts. */
  private crashed(child: ChildProcess, startedAt: number, how: string): void {
    if (this.stopped || this.asked.has(child) || child !== this.current) return;
    const say = this.opts.respawn!.say;
    const wait = this.backoff.afterCrash(startedAt);
    say(`${this.name} exited (${how}); starting it again in ${wait / 1000} s.`);
    // A start, restart or stop since the crash has replaced it: nothing left to do.
    const replaced = () => this.stopped || this.current !== child;
    const again = () => {
      this.respawnTimer = undefined;
      if (replaced()) return;
      this.launchReady().then(
        (next) => {
          if (replaced()) return void this.stopAsked(next);
          this.current = next;
          say(`${this.name} is running again (pid ${next.pid}).`);
        },
        (err: unknown) => {
          if (replaced()) return;
          const next = this.backoff.afterFailedStart();
          say(`${this.name} did not start again (${err instanceof Error ? err.message : String(err)}); next try in ${next / 1000} s.`);
          this.respawnTimer = setTimeout(again, next);
        },
      );
    };
    // kill9's holdDown: the backoff starts once the test lets go.
    const hold = this.holdDown;
    this.holdDown = undefined;
    const schedule = () => {
      if (!replaced()) this.respawnTimer = setTimeout(again, wait);
    };
    if (hold) void hold.then(schedule, schedule);
    else schedule();
  }
}
