/**
 * Reading the durable stream (SPEC 6.5) from a saved cursor. Items come in cursor order; each
 * id is yielded once per reader (stream deduplication is by item id). Save `cursor` after
 * handling an item and pass it back as `after` to resume where you stopped.
 */
import type { components } from './openapi.js';

type StreamItem = components['schemas']['StreamItem'];
type StreamPaging = components['schemas']['StreamPaging'];
type ListPage = (query: { after: string; limit: number }, signal?: AbortSignal) => Promise<{ data: StreamItem[]; paging: StreamPaging }>;

export interface StreamOptions {
  /** Exclusive cursor to start after: a saved `cursor` or `paging.cursor`. Default "0", the beginning. */
  after?: string;
  /** Page size, at most 100. Default 100. */
  limit?: number;
  /** Keep polling when the end is reached instead of finishing. */
  follow?: boolean;
  /** First wait after an empty page when following; doubles up to maxPollIntervalMs, back to this after items arrive. Default 1000. */
  pollIntervalMs?: number;
  maxPollIntervalMs?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
}

/** How many recent ids are remembered for deduplication. */
const SEEN_LIMIT = 10_000;

export class EventStream implements AsyncIterable<StreamItem> {
  #cursor: string;
  #paging: StreamPaging | undefined;
  readonly #seen = new Set<string>();

  constructor(
    private readonly listPage: ListPage,
    private readonly options: StreamOptions = {},
  ) {
    this.#cursor = options.after ?? '0';
  }

  /**
   * Where a reader that stops now should resume: the cursor of the last item yielded, or the
   * last page's `paging.cursor` once that page is finished (the given `after` on an empty page).
   */
  get cursor(): string {
    return this.#cursor;
  }

  /** The `paging` of the last page read. */
  get lastPaging(): StreamPaging | undefined {
    return this.#paging;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamItem> {
    const { limit = 100, follow = false, pollIntervalMs = 1000, maxPollIntervalMs = 30_000, signal } = this.options;
    let wait = pollIntervalMs;
    while (!signal?.aborted) {
      let page;
      try {
        page = await this.listPage({ after: this.#cursor, limit }, signal);
      } catch (err) {
        if (signal?.aborted) return;
        throw err;
      }
      this.#paging = page.paging;
      for (const item of page.data) {
        if (this.#seen.has(item.id)) continue;
        this.#remember(item.id);
        this.#cursor = item.cursor;
        yield item;
        if (signal?.aborted) return;
      }
      this.#cursor = page.paging.cursor;
      if (page.paging.has_more) {
        wait = pollIntervalMs;
        continue;
      }
      if (!follow) return;
      // Back off while the stream stays quiet; start again from the short wait once items arrive.
      if (page.data.length > 0) wait = pollIntervalMs;
      const aborted = await pause(wait, signal);
      if (aborted) return;
      wait = page.data.length > 0 ? pollIntervalMs : Math.min(wait * 2, maxPollIntervalMs);
    }
  }

  #remember(id: string): void {
    this.#seen.add(id);
    if (this.#seen.size > SEEN_LIMIT) this.#seen.delete(this.#seen.values().next().value!);
  }
}

/** Resolves true when the wait was cut short by the signal. */
function pause(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(true);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(true);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
