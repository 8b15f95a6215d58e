/**
 * Node arguments that run the `webhooks` CLI from its TypeScript source, as the published bin
 * (packages/cli/dist/main.js) would run: tests exercise the tree, never a stale build. The
 * built and packed CLI has its own test (test/kit/packages.test.ts).
 */
import path from 'node:path';
import { projectRoot } from '../../dev/tools.js';

export const SOURCE_CONDITION = '@webhook-platform/source';

export const WEBHOOKS_CLI = [`--conditions=${SOURCE_CONDITION}`, '--import', 'tsx', path.join(projectRoot, 'packages/cli/src/main.ts')];
