/** The one doubling backoff of the service's own retries (reconnects, the outbox, the local provider's notifications). */

/** `baseMs` after no failure, doubled per failure, never above `maxMs`. */
export function doublingBackoffMs(baseMs: number, failures: number, maxMs = Number.POSITIVE_INFINITY): number {
  return Math.min(baseMs * 2 ** failures, maxMs);
}
