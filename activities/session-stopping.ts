/**
 * Why a delivery session stops, and the waits a stop cuts short. The first reason wins; stopping
 * wakes the claims waiting for work (through the session's registry entry) and every lane
 * waiting for the endpoint's throttle, so nothing waits out a timer once the session is over.
 */
import type { Session } from './session-registry.js';

export type StopReason = 'failure' | 'not_sending' | 'idle' | 'time' | 'cancelled' | 'error';

export class SessionStopping {
  private why: StopReason | null = null;
  private readonly pauses = new Set<() => void>();

  constructor(private readonly news: Session) {}

  get reason(): StopReason | null {
    return this.why;
  }

  get stopped(): boolean {
    return this.why !== null;
  }

  halt(reason: StopReason): void {
    this.why ??= reason;
    this.news.interrupt();
    for (const resume of [...this.pauses]) resume();
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
