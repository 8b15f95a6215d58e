/**
 * Node arguments that run the `webhooks` CLI from its TypeScript source, as the published bin
 * (packages/cli/dist/main.js) would run: tests exercise the tree, never a stale build. The
 * built and packed CLI has its own test (test/kit/packages.test.ts).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../dev/tools.js';

export const SOURCE_CONDITION = '@webhook-platform/source';

export const WEBHOOKS_CLI = [`--conditions=${SOURCE_CONDITION}`, '--import', 'tsx', path.join(projectRoot, 'packages/cli/src/main.ts')];

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed, when it is JSON. */
  json: any;
}

/** Runs the `webhooks` CLI with `env`; resolves with its exit code and output (never rejects on a non-zero exit). */
export function runWebhooksCli(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...WEBHOOKS_CLI, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? ((error as { code?: number }).code ?? 1) : 0;
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr, json });
    });
  });
}
