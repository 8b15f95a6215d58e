/**
 * Whether a process has been busy for two samples running: each sample is the CPU it used over
 * the time since the one before, and one busy sample alone is a burst, not a load.
 */
export class BusySeconds {
  private previous = false;
  private both = false;

  /** `share`: the share of one core past which a sample is busy. */
  constructor(private readonly share: number) {}

  /** Takes one sample: `cpuMs` of CPU used over `elapsedMs`. */
  sample(cpuMs: number, elapsedMs: number): void {
    const now = elapsedMs > 0 && cpuMs / elapsedMs > this.share;
    this.both = now && this.previous;
    this.previous = now;
  }

  get busy(): boolean {
    return this.both;
  }
}
