import { createRequire } from 'node:module';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../delivery/activities.js';
import type { SessionDeps } from '../delivery/delivery-session.js';
import type { MaintenanceActivities } from '../workflows/maintenance-contract.js';
import { activityContextsOffWhenIdle } from './activity-contexts.js';
import { bundlerLogger, temporalLogger } from './temporal-logging.js';

const require = createRequire(import.meta.url);

/**
 * The workflow code, bundled from source on start; tests pass a bundle built once, and the
 * compiled worker (dist/, which has .js files only) the one `npm run build` made.
 */
export const workflowsPath = require.resolve(import.meta.url.endsWith('.ts') ? '../workflows/index.ts' : '../workflows/index.js');

export async function createWorker(opts: {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** What the worker's direct sessions share with its activities (src/delivery/direct-sessions.ts); their own when absent. */
  sessionDeps?: SessionDeps;
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Config.workerMaxCachedWorkflows (WORKER_MAX_CACHED_WORKFLOWS). */
  maxCachedWorkflows: number;
  /** The maintenance workflow's activities (src/worker/maintenance-activities.ts). */
  maintenance: MaintenanceActivities;
}): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    activities: { ...createActivities(opts.deps, opts.sessionDeps), ...opts.maintenance },
    // Bundled here rather than by Worker.create so the bundler's webpack report is a debug line, not an info screenful.
    workflowBundle: opts.workflowBundle ?? (await bundleWorkflowCode({ workflowsPath, logger: bundlerLogger(temporalLogger) })),
    // The workflow is signal-driven and long-lived; the cache keeps busy endpoints' workflows in memory.
    maxCachedWorkflows: opts.maxCachedWorkflows,
    // A delivery session holds its slot while it lingers for more work: one per busy endpoint. They are
    // cheap (promises awaiting sockets), so allow many, or lingering sessions would starve other activities.
    maxConcurrentActivityTaskExecutions: 1000,
    // A burst of workflows new to this worker (thousands of endpoints created, or woken after leaving the
    // cache) lands on the non-sticky queue, which the default pollers (10, a fifth of them non-sticky)
    // served two polls at a time: 7 workflow tasks/s with 1,500 waiting (bench --idle=2000). Autoscaled
    // pollers follow the backlog the server reports, and fall back to one poll each when nothing waits.
    workflowTaskPollerBehavior: { type: 'autoscaling' },
    activityTaskPollerBehavior: { type: 'autoscaling' },
    interceptors: { activity: [activityContextsOffWhenIdle(opts.connection)] },
  });
}
