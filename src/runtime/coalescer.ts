/**
 * Coalesces "look at this key" hints: every key added within a short window goes out in one
 * batch. At most one batch is in flight: keys added meanwhile wait for it and go together in
 * the next, so a slow receiver of the batches makes them bigger, never queues them up.
 */
export interface Coalescer<K extends string, V> {
  add(key: K, value: V): void;
  /** Sends what is waiting now (after the batch in flight); resolves when sent. */
  flush(): Promise<void>;
}

export function createCoalescer<K extends string, V>(send: (batch: Map<K, V>) => Promise<void>, windowMs: number): Coalescer<K, V> {
  let waiting = new Map<K, V>();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (inFlight) return inFlight.then(flush);
    if (waiting.size === 0) return Promise.resolve();
    const batch = waiting;
    waiting = new Map();
    inFlight = send(batch).finally(() => {
      inFlight = undefined;
      // What arrived while this batch was out goes next, without another window.
      if (waiting.size > 0 && !timer) timer = setTimeout(() => void flush(), 0);
    });
    return inFlight;
  }

  return {
    add(key, value) {
      waiting.set(key, value);
      if (!inFlight) timer ??= setTimeout(() => void flush(), windowMs);
    },
    flush,
  };
}
