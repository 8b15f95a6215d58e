/**
 * Group commit, as a queue per key (a stream): no SQL here. While a batch of a key runs, later
 * calls of that key wait and then go together in the next batch; when none runs, a call starts
 * one at once (after the current microtask, so calls made in one tick share it). No timer: a
 * lone call pays no waiting, and batches grow by themselves with the load.
 */

/** Runs a batch and answers each item, in order; throws when the batch as a whole failed. */
export type RunBatch<T, R> = (items: T[]) => Promise<R[]>;

export interface StreamBatcherOptions {
  /** Most items in one batch. */
  maxBatch: number;
  /**
   * An error that would fail any item (the database is unreachable): once an item retried alone
   * fails with one, the items after it get the same error instead of each waiting for its own.
   */
  failsAll?: (err: unknown) => boolean;
}

interface Waiting<T, R> {
  item: T;
  resolve: (r: R) => void;
  reject: (err: unknown) => void;
}

export class StreamBatcher<T, R> {
  /** The queue of each key that has a batch running or about to start; absent when idle. */
  private readonly queues = new Map<string, Waiting<T, R>[]>();

  constructor(
    private readonly run: RunBatch<T, R>,
    private readonly opts: StreamBatcherOptions,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const queue = this.queues.get(key);
      if (queue) {
        queue.push({ item, resolve, reject });
        return;
      }
      const fresh: Waiting<T, R>[] = [{ item, resolve, reject }];
      this.queues.set(key, fresh);
      queueMicrotask(() => void this.drain(key, fresh));
    });
  }

  private async drain(key: string, queue: Waiting<T, R>[]): Promise<void> {
    while (queue.length > 0) await this.settle(queue.splice(0, this.opts.maxBatch));
    // No await since the last check: a call arriving now finds no queue and starts the next batch.
    this.queues.delete(key);
  }

  private async settle(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.run(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]!));
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
    }
    // One bad item (or a lost connection) must fail only its own caller: each goes again alone,
    // in order, so the others still get their results.
    for (let i = 0; i < batch.length; i++) {
      const w = batch[i]!;
      try {
        w.resolve((await this.run([w.item]))[0]!);
      } catch (err) {
        w.reject(err);
        if (this.opts.failsAll?.(err)) {
          for (const rest of batch.slice(i + 1)) rest.reject(err);
          return;
        }
      }
    }
  }
}
