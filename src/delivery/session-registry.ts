/**
 * The delivery sessions running in this worker, by endpoint, so that news of due work reaches
 * a running session directly instead of through its workflow (a signal and a workflow task).
 */
export interface Session {
  /** Resolves true when poked (or stopped), false when `ms` pass first, or `until` settles first. */
  wait(ms: number, until?: Promise<unknown>): Promise<boolean>;
  /** Wakes whatever waits, as a poke does (the session is stopping). */
  interrupt(): void;
  /**
   * From here on, pokes are refused: news of due work goes to the workflow instead. The session
   * then looks for due work once more before it ends, so nothing arriving meanwhile is missed.
   */
  ending(): void;
  /** Takes pokes again (the last look found work). */
  resume(): void;
  close(): void;
}

export interface SessionRegistry {
  open(endpointId: string): Session;
  /** Tells the endpoint's sessions here that work is due; false when none takes it. */
  poke(endpointId: string): boolean;
  /** Calls `listener` with the endpoint of every session opened from now on. */
  onOpen(listener: (endpointId: string) => void): void;
}

interface Entry {
  poked: boolean;
  ending: boolean;
  wake: (() => void) | null;
}

export function createSessionRegistry(): SessionRegistry {
  const byEndpoint = new Map<string, Set<Entry>>();
  const openListeners: ((endpointId: string) => void)[] = [];

  function wake(entry: Entry) {
    entry.poked = true;
    entry.wake?.();
  }

  return {
    open(endpointId) {
      const entry: Entry = { poked: false, ending: false, wake: null };
      let set = byEndpoint.get(endpointId);
      if (!set) byEndpoint.set(endpointId, (set = new Set()));
      set.add(entry);
      for (const listener of openListeners) listener(endpointId);
      return {
        wait(ms, until) {
          if (entry.poked) {
            entry.poked = false;
            return Promise.resolve(true);
          }
          return new Promise<boolean>((resolve) => {
            let waiting = true;
            const timer = setTimeout(() => done(false), Math.max(0, ms));
            // Once: an `until` that settles after this wait ended must not end the next one's.
            function done(poked: boolean) {
              if (!waiting) return;
              waiting = false;
              clearTimeout(timer);
              entry.wake = null;
              entry.poked = false;
              resolve(poked);
            }
            entry.wake = () => done(true);
            until?.then(
              () => done(false),
              () => done(false),
            );
          });
        },
        interrupt: () => wake(entry),
        ending: () => {
          entry.ending = true;
        },
        resume: () => {
          entry.ending = false;
        },
        close() {
          entry.wake?.();
          set.delete(entry);
          if (set.size === 0) byEndpoint.delete(endpointId);
        },
      };
    },
    onOpen(listener) {
      openListeners.push(listener);
    },
    poke(endpointId) {
      let taken = false;
      for (const entry of byEndpoint.get(endpointId) ?? []) {
        if (entry.ending) continue;
        wake(entry);
        taken = true;
      }
      return taken;
    },
  };
}
