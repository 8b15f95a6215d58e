/** The retry curve of DECISIONS: 1, 2, 4, 8, 16, 32, 60 minutes, then 60 forever. */
export const RETRY_CURVE_MINUTES = [1, 2, 4, 8, 16, 32, 60] as const;

/** Delay after the n-th consecutive failure (n >= 1), in milliseconds. */
export function retryDelayMs(n: number): number {
  const index = Math.min(Math.max(n, 1), RETRY_CURVE_MINUTES.length) - 1;
  return RETRY_CURVE_MINUTES[index]! * 60_000;
}
