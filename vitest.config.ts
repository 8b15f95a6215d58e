import { defineConfig } from 'vitest/config';

/** The workspace packages' exports condition for their TypeScript source: tests run what is in the tree, never a stale dist. */
const SOURCE = '@webhook-platform/source';

export default defineConfig({
  ssr: { resolve: { conditions: [SOURCE, 'module', 'node', 'development|production'] } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Each file runs in its own process: the Temporal worker's native runtime does not belong in worker threads.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    reporters: ['default'],
  },
});
