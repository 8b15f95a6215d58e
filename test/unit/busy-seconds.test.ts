import { describe, expect, it } from 'vitest';
import { BusySeconds } from '../../src/core/busy-seconds.js';

describe('busy seconds', () => {
  it('is busy only after two busy samples running, and no longer after a quiet one', () => {
    const b = new BusySeconds(0.9);
    expect(b.busy).toBe(false);
    b.sample(950, 1_000);
    expect(b.busy).toBe(false);
    b.sample(990, 1_000);
    expect(b.busy).toBe(true);
    b.sample(300, 1_000);
    expect(b.busy).toBe(false);
    b.sample(950, 1_000);
    expect(b.busy).toBe(false);
  });

  it('reads each sample as a share of its own span, and at the share exactly as not busy', () => {
    const b = new BusySeconds(0.5);
    b.sample(600, 1_000);
    b.sample(1_000, 2_000);
    expect(b.busy).toBe(false);
    b.sample(1_100, 2_000);
    b.sample(300, 500);
    expect(b.busy).toBe(true);
    b.sample(0, 0);
    expect(b.busy).toBe(false);
  });
});
