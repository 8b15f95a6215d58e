/**
 * Replays recorded histories of real runs against today's workflow code. A change that
 * would break running workflows (non-determinism) fails here; guard it with `patched()`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.binpb'));

describe('replay of recorded endpoint workflow histories', () => {
  it('has recorded histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays deterministically', async (file) => {
    // Binary protobuf: the SDK's JSON history path trips over its own duplicated protobufjs copies.
    const history = temporal.api.history.v1.History.decode(fs.readFileSync(path.join(dir, file)));
    await expect(Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, file)).resolves.toBeUndefined();
  });
});
