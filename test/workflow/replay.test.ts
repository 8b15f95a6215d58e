/**
 * Replays recorded histories of real runs against today's workflow code. A change that
 * would break running workflows (non-determinism) fails here; guard it with `patched()`. A
 * deliberately changed workflow proves the replay can fail at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode, Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'histories');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.binpb'));
// Binary protobuf: the SDK's JSON history path trips over its own duplicated protobufjs copies.
const load = (file: string) => temporal.api.history.v1.History.decode(fs.readFileSync(path.join(dir, file)));

describe('replay of recorded workflow histories (endpoint and maintenance)', () => {
  it('has recorded histories to replay', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it.each(files)('%s replays deterministically', async (file) => {
    const history = load(file);
    await expect(
      Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history, file),
    ).resolves.toBeUndefined();
  });
});

describe('replay can fail', () => {
  it('every recorded history is refused by a deliberately changed workflow (a timer before its first step)', async () => {
    const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error: console.error, log() {} } as never;
    const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'changed-workflows.ts');
    const workflowBundle = await bundleWorkflowCode({ workflowsPath, logger: quiet });
    for (const file of files) {
      await expect(Worker.runReplayHistory({ workflowBundle }, load(file), file), file).rejects.toBeInstanceOf(DeterminismViolationError);
    }
  }, 120_000);
});
