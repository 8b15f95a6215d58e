/**
 * Production worker: runs endpoint workflows, the maintenance workflow and their activities against
 * TEMPORAL_ADDRESS and DATABASE_URL, and makes sure the maintenance Schedule exists.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection } from '@temporalio/worker';
import { loadServiceConfig, startServices, type ServiceConfig } from '../services.js';
import { logger } from '../runtime/logger.js';
import { endpointWorkflows, ensureSearchAttributes, type EndpointWorkflows } from '../delivery/workflow-client.js';
import type { Resolver } from '../security/destination-policy.js';
import type { SessionDeps } from '../delivery/delivery-session.js';
import { sessionDepsOf, type ActivityDeps } from '../delivery/activities.js';
import { createSessionLeases, type SessionLeases } from '../delivery/session-leases.js';
import { createSessionRegistry, type SessionRegistry } from '../delivery/session-registry.js';
import { dueChannel } from '../db/due-notifications.js';
import { createDueWakes } from '../events/due-wakes.js';
import { createWorker } from './create-worker.js';
import { runCrmOutboxSweep } from '../crm/outbox-sweep.js';
import { createDirectSessions } from '../delivery/direct-sessions.js';
import { startDueRouter } from '../delivery/due-router.js';
import { startSessionPreference } from '../delivery/session-preference.js';
import { runOutboxSender } from './outbox-sender.js';
import { installTemporalLogging } from './temporal-logging.js';
import { createProviderHttp } from '../channels/provider-http.js';
import { createMaintenanceActivities } from './maintenance-activities.js';
import { ensureMaintenanceScheduleBeside } from './maintenance-schedule.js';
import { claimWithEndpointsFor } from '../db/deliveries.js';
import { NIL_UUID, type Db, type DbClient } from '../db/pool.js';
import { LEASE_MS } from '../core/runtime-limits.js';
import { warmUpSending } from '../delivery/sending-warm-up.js';
import { warmUpLogged } from '../runtime/warm-up.js';

export async function runWorker(
  config: ServiceConfig,
  opts: { signal?: AbortSignal; resolver?: Resolver; workflowBundlePath?: string; onRunning?: () => void } = {},
): Promise<void> {
  installTemporalLogging();
  // The sessions' shared claim, prepared on the warmed connections (a nil endpoint: nothing is claimed).
  const prepare = async (client: DbClient) =>
    void (await claimWithEndpointsFor(client, [{ endpointId: NIL_UUID, now: new Date(), limit: 1, owner: 'warm-up' }], LEASE_MS));
  const services = await startServices(config, { ...opts, prepare });
  const { db, httpClient, temporal } = services;
  await ensureSearchAttributes(temporal.connection, config.temporalNamespace);
  const sessions = createSessionRegistry();
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const workflows = endpointWorkflows(temporal.client, config.taskQueue);
  const deps: ActivityDeps = {
    db,
    httpClient,
    secretBox: services.secretBox,
    sessions,
    lingerMs: config.deliveryLingerMs,
    // Taken by the workflows' sessions even with direct sessions off here: a deployment whose
    // workers differ in DIRECT_SESSIONS (a rolling change of it) still runs one session per endpoint.
    leases: createSessionLeases(db),
    directSessions: config.directSessions,
  };
  // One recorder, one set of shared reads and claims, for the workflows' sessions and the direct ones.
  const sessionDeps = sessionDepsOf(deps);
  // Before the Temporal worker polls and the due router listens (src/delivery/sending-warm-up.ts).
  await warmUpLogged('sending path', config.warmUpRequests, (requests) =>
    warmUpSending({
      requests,
      concurrency: sessionDeps.concurrency,
      secretBox: sessionDeps.secretBox,
      timeoutMs: config.deliveryTimeoutMs,
    }),
  );
  const worker = await createWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps,
    sessionDeps,
    workflowBundle: opts.workflowBundlePath ? { codePath: opts.workflowBundlePath } : undefined,
    maxCachedWorkflows: config.workerMaxCachedWorkflows,
    maintenance: createMaintenanceActivities({
      db,
      secretBox: services.secretBox,
      retentionDays: config.deliveryRetentionDays,
      providerApi: config.providerApiUrl
        ? createProviderHttp({ baseUrl: config.providerApiUrl, accessToken: config.providerAccessToken ?? '' })
        : undefined,
    }),
  });
  logger.info({ taskQueue: config.taskQueue }, 'worker started');
  // The SDK already stops the worker on SIGINT/SIGTERM; the signal covers embedded use.
  opts.signal?.addEventListener('abort', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  const routing = await startNewsRouting(config, db, sessions, workflows, { ...sessionDeps, leases: deps.leases! });
  const outboxStop = new AbortController();
  const outbox = runOutboxSender(db, { smtpUrl: config.smtpUrl, from: config.smtpFrom, signal: outboxStop.signal });
  const crmWakes = createDueWakes(db, dueChannel(config.taskQueue));
  const crmSweep = runCrmOutboxSweep({ db, wakes: crmWakes }, { signal: outboxStop.signal });
  const schedule = config.maintenanceSchedule ? ensureMaintenanceScheduleBeside(temporal.client, config.taskQueue) : undefined;
  try {
    const running = worker.run();
    opts.onRunning?.();
    await running;
  } finally {
    await schedule?.stop();
    outboxStop.abort();
    await outbox;
    await crmSweep;
    await crmWakes.flush();
    await routing.close();
    await connection.close();
    await services.close();
  }
}

/**
 * The worker's due router (news of due deliveries), with direct sessions unless DIRECT_SESSIONS is
 * off, and the deployment-wide preference that lets one worker ask first for a session's lease.
 */
async function startNewsRouting(
  config: ServiceConfig,
  db: Db,
  sessions: SessionRegistry,
  workflows: EndpointWorkflows,
  sessionDeps: SessionDeps & { leases: SessionLeases },
): Promise<{ close(): Promise<void> }> {
  const preference = config.directSessions
    ? startSessionPreference({ databaseUrl: config.databaseUrl, channel: dueChannel(config.taskQueue), leaveNews: config.dueSweepMs > 0 })
    : undefined;
  // Not hearing news until its router listens: shown before the others can see it preferred.
  preference?.listening(false);
  await preference?.ready;
  const router = startDueRouter({
    databaseUrl: config.databaseUrl,
    db,
    channel: dueChannel(config.taskQueue),
    sessions,
    workflows,
    sweepEveryMs: config.dueSweepMs,
    heldQuietMs: config.deliveryLingerMs,
    preference,
    direct: config.directSessions
      ? createDirectSessions({ deps: sessionDeps, workflows, preference, reportEveryMs: config.directReportEveryMs })
      : undefined,
  });
  return {
    async close() {
      // Given up first: the others leave news to the preferred worker, and this one is about to stop hearing it.
      await preference?.close();
      await router.close();
    },
  };
}

/** The bundle `npm run build` writes beside the compiled worker (dist/workflow-bundle.js); none when running the source. */
function prebuiltWorkflowBundle(): string | undefined {
  if (import.meta.url.endsWith('.ts')) return undefined;
  const bundle = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
  if (!fs.existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` (it bundles the workflow code).`);
  return bundle;
}

if (import.meta.url === `file://${process.argv[1]}`)
  await runWorker(loadServiceConfig('npm run worker'), {
    workflowBundlePath: prebuiltWorkflowBundle(),
    // A supervisor that gave this process an IPC channel (the production-shape launcher) learns it polls.
    onRunning: () => process.send?.({ type: 'worker-running' }),
  });
