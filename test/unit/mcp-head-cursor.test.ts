import { describe, expect, it } from 'vitest';
import { headCursor, type StreamReader } from '../../packages/mcp/src/live-stream.js';

/** A stream with the given cursors (gaps where events were deleted), paged like GET /api/v1/events. */
function streamOf(cursors: number[]): StreamReader & { reads: number } {
  const fake = Object.assign(
    async (afterCursor: string, limit: number) => {
      fake.reads++;
      const after = Number(afterCursor);
      const rest = cursors.filter((c) => c > after);
      const data = rest.slice(0, limit).map((c) => ({ id: `e${c}`, cursor: String(c), type: 't' }));
      const hasMore = rest.length > data.length;
      return {
        data,
        paging: { cursor: data.at(-1)?.cursor ?? String(after), next: hasMore ? data.at(-1)!.cursor : null, has_more: hasMore },
      };
    },
    { reads: 0 },
  );
  return fake;
}

describe('the head of the stream', () => {
  it('is 0 for an empty stream and the last cursor otherwise, across gaps', async () => {
    expect(await headCursor(streamOf([]))).toBe(0n);
    expect(await headCursor(streamOf([1]))).toBe(1n);
    expect(await headCursor(streamOf([3, 7, 8, 20, 1000]))).toBe(1000n);
    expect(await headCursor(streamOf([1, 2, 3, 4, 5, 6, 7, 8]))).toBe(8n);
  });

  it('takes a logarithmic number of reads, not one page per 100 items', async () => {
    const api = streamOf(Array.from({ length: 1_000_000 }, (_, i) => i + 1));
    expect(await headCursor(api)).toBe(1_000_000n);
    expect(api.reads).toBeLessThan(50);
  });
});
