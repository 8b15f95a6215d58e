/**
 * Group commit, as a queue per key (a stream): no SQL here. While a batch of a key runs, later
 * calls of that key wait and then go together in the next batch; when none runs, a call starts
 * one at once (after the current microtask, so calls made in one tick share it). No timer: a
 * lone call pays no waiting, and batches grow by themselves with the load.
 *
 * Under load a key may run more batches at once (`maxInFlight`): once `minShare` calls wait, they
 * start a batch beside the running one instead of waiting for it, and a queue long enough is
 * shared among the free places (so writers that all answer at once do not stay in one batch).
 * Batches in flight together keep their order through their Turn: each one waits for the
 * previous one to have taken its place (in a stream: to hold the head's lock) before it takes its
 * own, so their work before that point overlaps and their order does not change.
 */

/**
 * A batch's place in its key's order. `ready` resolves once the previous batch has called
 * `placed` (or ended, whatever its outcome); `isReady` says whether it has, without waiting.
 */
export interface Turn {
  readonly ready: Promise<void>;
  isReady(): boolean;
  /** This batch has taken its place: the next batch of the key may take its own. Idempotent. */
  placed(): void;
}

/** Runs a batch and answers each item, in order; throws when the batch as a whole failed. */
export type RunBatch<T, R> = (items: T[], turn: Turn) => Promise<R[]>;

export interface StreamBatcherOptions {
  /** Most items in one batch. */
  maxBatch: number;
  /** Most batches of one key running at once (1 unless given): each waits for its turn (Turn) to take its place. */
  maxInFlight?: number;
  /** Fewest calls that start a batch beside a running one, and fewest in each share of a queue split among free places. */
  minShare?: number;
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

/** A latch: the placement of one batch. */
class Placement {
  done = false;
  private release!: () => void;
  readonly promise = new Promise<void>((r) => (this.release = r));
  settle(): void {
    this.done = true;
    this.release();
  }
  static readonly settled: Placement = (() => {
    const p = new Placement();
    p.settle();
    return p;
  })();
}

interface Lane<T, R> {
  queue: Waiting<T, R>[];
  running: number;
  /** A batch start is queued (a microtask) and has not taken its items yet. */
  starting: boolean;
  /** The placement of the batch started last: the next batch's turn waits for it. */
  last: Placement;
}

export class StreamBatcher<T, R> {
  /** The lane of each key that has a batch running or about to start; absent when idle. */
  private readonly lanes = new Map<string, Lane<T, R>>();

  constructor(
    private readonly run: RunBatch<T, R>,
    private readonly opts: StreamBatcherOptions,
  ) {}

  submit(key: string, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = { queue: [], running: 0, starting: false, last: Placement.settled };
        this.lanes.set(key, lane);
      }
      lane.queue.push({ item, resolve, reject });
      if (!lane.starting && this.mayStart(lane)) {
        lane.starting = true;
        const started = lane;
        queueMicrotask(() => {
          started.starting = false;
          this.start(key, started);
        });
      }
    });
  }

  /** Whether the lane's queue starts a batch now: when none runs, or when enough wait for a place beside the running ones. */
  private mayStart(lane: Lane<T, R>): boolean {
    if (lane.queue.length === 0) return false;
    if (lane.running === 0) return true;
    return lane.running < (this.opts.maxInFlight ?? 1) && lane.queue.length >= (this.opts.minShare ?? 1);
  }

  /**
   * Starts one batch of the lane's queue (its share when the queue is long enough to fill the free
   * places), then the next if it may start too; when a batch ends, the next with what queued
   * meanwhile, or the lane is idle.
   */
  private start(key: string, lane: Lane<T, R>): void {
    const free = (this.opts.maxInFlight ?? 1) - lane.running;
    const minShare = this.opts.minShare ?? 1;
    const share = free > 1 && lane.queue.length >= 2 * minShare ? Math.ceil(lane.queue.length / free) : lane.queue.length;
    const batch = lane.queue.splice(0, Math.min(this.opts.maxBatch, share));
    lane.running++;
    const previous = lane.last;
    const mine = new Placement();
    lane.last = mine;
    const turn: Turn = { ready: previous.promise, isReady: () => previous.done, placed: () => mine.settle() };
    void this.settle(batch, turn).finally(() => {
      // Whatever happened, the next batch must not wait for this one any more.
      mine.settle();
      lane.running--;
      // No await since the last check: a call arriving now finds no lane and starts the next batch.
      if (lane.starting) return;
      if (this.mayStart(lane)) this.start(key, lane);
      else if (lane.running === 0) this.lanes.delete(key);
    });
    if (!lane.starting && this.mayStart(lane)) this.start(key, lane);
  }

  private async settle(batch: Waiting<T, R>[], turn: Turn): Promise<void> {
    try {
      const results = await this.run(
        batch.map((w) => w.item),
        turn,
      );
      batch.forEach((w, i) => w.resolve(results[i]!));
      return;
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
    }
    // One bad item (or a lost connection) must fail only its own caller: each goes again alone,
    // in order, so the others still get their results. The batch counts as placed only once all
    // have gone (settle's caller says so), so the next batch still comes after them.
    const alone: Turn = { ready: turn.ready, isReady: turn.isReady, placed: () => {} };
    for (let i = 0; i < batch.length; i++) {
      const w = batch[i]!;
      try {
        w.resolve((await this.run([w.item], alone))[0]!);
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
