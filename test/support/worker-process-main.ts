/** Entry of a worker in a process of its own (see worker-process.ts); configured by the environment like `npm run worker`. */
import { loadConfig } from '../../src/runtime/config.js';
import { runWorker } from '../../src/worker/main.js';

const config = loadConfig();
await runWorker(
  { ...config, databaseUrl: config.databaseUrl!, temporalAddress: config.temporalAddress! },
  { workflowBundlePath: process.env.WORKFLOW_BUNDLE_PATH },
);
