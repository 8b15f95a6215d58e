/** The `p`th percentile of `sorted` (ascending) by nearest rank, as every benchmark reports it; NaN for no values. */
export const pct = (sorted: number[], p: number): number =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
