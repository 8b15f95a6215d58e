/**
 * Why a delivery session stops, and the waits a stop cuts short. The first reason wins; stopping
 * wakes the claims waiting for work (through the session's registry entry) and every lane
 * waiting for the endpoint's throttle or for a share of its origin's connections (`signal`), so
 * nothing waits out a timer or a slow neighbour once the session is over.
 */
import { setMaxListeners } from 'node:events';
import type { Session } from './session-registry.js';

export type StopReason = 'failure' | 'not_sending' | 'idle' | 'time' | 'cancelled' | 'error';

export class SessionStopping {
  private why: StopReason | null = null;
  private readonly pauses = new Set<() => void>();
  private readonly aborts = new AbortController();

  constructor(private readonly news: Session) {
    // Every lane waiting for a share of a busy origin listens: as many as the session's lanes.
    setMaxListeners(0, this.aborts.signal);
  }

  get reason(): StopReason | null {
    return this.why;
  }

  get stopped(): boolean {
    return this.why !== null;
  }

  /** Aborted when the session stops. */
  get signal(): AbortSignal {
    return this.aborts.signal;
  }

  halt(reason: StopReason): void {
    this.why ??= reason;
    this.news.interrupt();
    for (const resume of [...this.pauses]) resume();
    this.aborts.abort();
  }

  /** Waits `ms`, or less when the session stops meanwhile. */
  pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const pauses = this.pauses;
      function done() {
        clearTimeout(timer);
        pauses.delete(done);
        resolve();
      }
      pauses.add(done);
    });
  }
}
