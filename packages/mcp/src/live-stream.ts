/**
 * Follows the durable stream from its head and reports new items: the MCP subscription of
 * `webhooks://events/live`. The API pages forward from a cursor only, so the head is found by
 * probing: doubling, then bisecting, about 2·log2(N) one-item reads instead of N/100 pages.
 */
import { EventStream, type WebhookPlatform } from '@webhook-platform/sdk';

export interface StreamItem {
  id: string;
  cursor: string;
  type: string;
  [field: string]: unknown;
}

export interface StreamPage {
  data: StreamItem[];
  paging: { cursor: string; next: string | null; has_more: boolean };
}

/** The largest cursor the API accepts (18 digits). */
const MAX_CURSOR = 999_999_999_999_999_999n;
/** Items kept for reads of the live resource. */
const KEEP = 100;

/** One page of the stream after a cursor (exclusive). */
export type StreamReader = (after: string, limit: number) => Promise<StreamPage>;

/** GET /api/v1/events through the SDK: the whole answer, as the read_stream tool shows it. */
export function streamReader(api: WebhookPlatform, timeoutMs: number): StreamReader {
  return async (after, limit) =>
    (await api.call('listEvents', { query: { after, limit }, signal: AbortSignal.timeout(timeoutMs) })) as StreamPage;
}

/**
 * The cursor of the newest item (0 for an empty stream). Invariants: `lo` is 0 or the cursor
 * of an item; nothing lies after `hi`. Cursors may have gaps (deleted events), so a probe
 * moves `lo` to the item it finds rather than to the probe.
 */
export async function headCursor(read: StreamReader): Promise<bigint> {
  let lo = 0n;
  let hi: bigint | undefined;
  for (;;) {
    const probe = hi === undefined ? (lo * 2n < MAX_CURSOR ? lo * 2n : MAX_CURSOR) : lo + (hi - lo) / 2n;
    const first = (await read(probe.toString(), 1)).data[0];
    if (first) lo = BigInt(first.cursor);
    else if (probe === lo) return lo;
    else hi = probe;
  }
}

export class LiveStream {
  private cursor: bigint | undefined;
  private items: StreamItem[] = [];
  private timer: NodeJS.Timeout | undefined;
  private watching = false;

  constructor(
    private readonly read: StreamReader,
    private readonly opts: { pollIntervalMs: number; onItems: (items: StreamItem[]) => void; onError: (err: unknown) => void },
  ) {}

  /** What the live resource shows: the head cursor and the items that arrived while watching. */
  async snapshot(): Promise<{ cursor: string; watching: boolean; items: StreamItem[] }> {
    this.cursor ??= await headCursor(this.read);
    return { cursor: this.cursor.toString(), watching: this.watching, items: [...this.items] };
  }

  async start(): Promise<void> {
    if (this.watching) return;
    this.cursor ??= await headCursor(this.read);
    this.watching = true;
    this.schedule();
  }

  stop(): void {
    this.watching = false;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    // A timeout chain, not an interval: a slow poll never overlaps the next one.
    this.timer = setTimeout(() => {
      void this.poll()
        .catch(this.opts.onError)
        .finally(() => {
          if (this.watching) this.schedule();
        });
    }, this.opts.pollIntervalMs);
    this.timer.unref();
  }

  /** Reads every page after the cursor with the SDK's stream reader, which ends at the head. */
  private async poll(): Promise<void> {
    // The SDK types every field of an item; the live resource relies only on id, cursor and type.
    const stream = new EventStream((q) => this.read(q.after, q.limit) as ReturnType<WebhookPlatform['events']['list']>, {
      after: this.cursor!.toString(),
      limit: 100,
    });
    const fresh: StreamItem[] = [];
    for await (const item of stream) fresh.push(item as StreamItem);
    this.cursor = BigInt(stream.cursor);
    if (fresh.length === 0) return;
    this.items = [...this.items, ...fresh].slice(-KEEP);
    this.opts.onItems(fresh);
  }
}
