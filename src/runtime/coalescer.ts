/**
 * Coalesces "look at this key" hints: every key added within a short window goes out in one
 * batch. At most one batch is in flight: keys added meanwhile wait for it and go together in
 * the next, so a slow receiver of the batches makes them bigger, never queues them up.
 *
 * With `leading`, the first key after a quiet spell (no batch sent within the window) goes on the
 * next turn of the event loop, with whatever that turn adds, instead of at the window's end: a
 * lone hint waited out the whole window for nothing. Keys that follow it within the window wait
 * for its end, as before.
 */
export interface Coalescer<K extends string, V> {
  add(key: K, value: V): void;
  /** Sends what is waiting now (after the batch in flight); resolves when sent. */
  flush(): Promise<void>;
  /**
   * With `leading`: when nothing is waiting or out and nothing was sent for `quietMs` (the window
   * unless given, and never less than it), the caller sends its keys itself, now, and the window
   * runs as if a batch had gone: true. False otherwise (add them as usual).
   */
  claimLeading(quietMs?: number): boolean;
}

export function createCoalescer<K extends string, V>(
  send: (batch: Map<K, V>) => Promise<void>,
  windowMs: number,
  o: { leading?: boolean } = {},
): Coalescer<K, V> {
  let waiting = new Map<K, V>();
  /** Cancels the flush that is scheduled; undefined when none is. */
  let scheduled: (() => void) | undefined;
  let inFlight: Promise<void> | undefined;
  let lastSentAt = -Infinity;

  function schedule(ms: number): void {
    if (ms <= 0) {
      const immediate = setImmediate(() => void flush());
      scheduled = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(() => void flush(), ms);
      scheduled = () => clearTimeout(timer);
    }
  }

  function flush(): Promise<void> {
    scheduled?.();
    scheduled = undefined;
    if (inFlight) return inFlight.then(flush);
    if (waiting.size === 0) return Promise.resolve();
    const batch = waiting;
    waiting = new Map();
    lastSentAt = performance.now();
    inFlight = send(batch).finally(() => {
      inFlight = undefined;
      // What arrived while this batch was out goes next, without another window.
      if (waiting.size > 0 && !scheduled) schedule(0);
    });
    return inFlight;
  }

  return {
    add(key, value) {
      waiting.set(key, value);
      if (inFlight || scheduled) return;
      schedule(o.leading ? lastSentAt + windowMs - performance.now() : windowMs);
    },
    flush,
    claimLeading(quietMs = windowMs) {
      if (!o.leading || inFlight || scheduled || waiting.size > 0) return false;
      if (performance.now() - lastSentAt < Math.max(quietMs, windowMs)) return false;
      lastSentAt = performance.now();
      return true;
    },
  };
}
