/**
 * `npm start`: the whole service on one machine with no Docker. Postgres is embedded
 * unless DATABASE_URL is set; Temporal is the CLI dev server (Web UI included, state in
 * DATA_DIR) unless TEMPORAL_ADDRESS is set. The API runs in this process and the worker in a
 * child process of its own (the TypeScript source, supervised as the production shape's workers
 * are: restarted after a crash), so the two use two cores. Ctrl-C stops everything in order.
 */
import path from 'node:path';
import { listenUrl, startApi } from '../src/api/server.js';
import { listChatappNumbers } from '../src/db/channel-accounts.js';
import { createChannelAccount, createCustomer, firstAccountId } from '../src/db/directory.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { DEV_HOST, devModeWarning, loadConfig, type Config } from '../src/runtime/config.js';
import { flushLogs, logFormat } from '../src/runtime/logger.js';
import { loadOrCreateEncryptionKey } from '../src/security/secret-box.js';
import { startLocalProvider } from './local-provider/server.js';
import { addWaba, newNumericId } from './local-provider/state.js';
import { leaveSignalsToCaller, startEmbeddedPostgres } from './embedded-postgres.js';
import { onParentGone, runInOwnProcessGroup } from './own-process-group.js';
import { bootstrapLocalAccount } from './local-account.js';
import { preferredPort } from './ports.js';
import { workerProcess } from './service-processes.js';
import { startTemporalDevServer } from './temporal-servers.js';

// The logger batches its lines: what it holds goes first, so the output keeps its order.
const say = (line: string) => {
  flushLogs();
  process.stdout.write(`${line}\n`);
};
const config = loadConfig();
const LOCAL_PROVIDER_PORT = Number(process.env.LOCAL_PROVIDER_PORT ?? 4100);
const stops: Array<() => Promise<void>> = [];

/**
 * Without PROVIDER_API_URL the local provider stands in for the messaging provider (its send
 * API, statuses, templates, signup), posting its signed notifications to this API. It keeps
 * nothing across restarts, so it is told the numbers the platform already has.
 */
async function startDevProvider(databaseUrl: string): Promise<Partial<Config>> {
  if (config.providerApiUrl) return {};
  const appSecret = config.providerAppSecret ?? 'local-provider-app-secret';
  const accessToken = config.providerAccessToken ?? 'local-provider-access-token';
  const provider = await startLocalProvider({
    port: await preferredPort(LOCAL_PROVIDER_PORT),
    platformUrl: listenUrl(config.host ?? DEV_HOST, config.port),
    appSecret,
    accessToken,
  });
  stops.unshift(provider.close);
  const db = createPool(databaseUrl, 1);
  try {
    await ensureLocalNumber(db);
    for (const n of await listChatappNumbers(db)) {
      const known = provider.state.wabas.get(n.waba_id)?.phone_numbers ?? [];
      addWaba(provider.state, { id: n.waba_id, phone_numbers: [...known, { id: n.phone_number_id, display_phone_number: n.display }] });
    }
  } finally {
    await db.end();
  }
  say(`Local provider:  ${provider.rootUrl}  (stands in for the messaging provider; PROVIDER_API_URL=${provider.url})`);
  return { providerApiUrl: provider.url, providerAccessToken: accessToken, providerAppSecret: appSecret };
}

/** The local Account gets one chatapp number on the local provider, so a message can be sent at once. */
async function ensureLocalNumber(db: Db): Promise<void> {
  const accountId = await firstAccountId(db);
  if (!accountId || (await listChatappNumbers(db)).length > 0) return;
  const customer = await createCustomer(db, { accountId, name: 'Local customer' });
  const account = await createChannelAccount(db, {
    accountId,
    customerId: customer.id,
    channel: 'chatapp',
    display: '+1 555 0100',
    phoneNumberId: newNumericId(),
    wabaId: newNumericId(),
  });
  say(`Created a chatapp number on the local provider: channel account ${account.id} (+1 555 0100), Customer ${customer.id}.`);
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Until the service runs, a stop signal only stops the servers started so far. */
function stopWhileStarting(): () => void {
  const stopStarted = () => {
    void (async () => {
      for (const stop of stops) await stop().catch(() => {});
      process.exit(0);
    })();
  };
  for (const signal of STOP_SIGNALS) process.on(signal, stopStarted);
  return () => STOP_SIGNALS.forEach((signal) => process.off(signal, stopStarted));
}

async function main() {
  const started = stopWhileStarting();
  const warning = devModeWarning(config);
  if (warning) say(warning);
  say(`Data folder: ${config.dataDir}`);
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    say('Starting embedded PostgreSQL...');
    const pg = await startEmbeddedPostgres(config.dataDir);
    stops.unshift(pg.stop);
    databaseUrl = pg.url;
  }
  let temporalAddress = config.temporalAddress;
  let uiUrl: string | undefined;
  if (!temporalAddress) {
    say('Starting the Temporal dev server...');
    const temporal = await startTemporalDevServer({
      dbFile: path.join(config.dataDir, 'temporal.db'),
      port: await preferredPort(config.devServerPorts.frontend),
      uiPort: await preferredPort(config.devServerPorts.ui),
      logFile: path.join(config.dataDir, 'temporal.log'),
    });
    stops.unshift(temporal.stop);
    temporalAddress = temporal.address;
    uiUrl = temporal.uiUrl;
  }
  await migrate(databaseUrl);
  const keys = await bootstrapLocalAccount(databaseUrl, config.dataDir, say);
  const provider = await startDevProvider(databaseUrl);

  // Created here, so the API and the worker share one key instead of racing to generate it.
  loadOrCreateEncryptionKey(config.encryptionKey, config.dataDir);
  const workerEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    DATA_DIR: config.dataDir,
    // Its output goes through this process's stdout: the format this process logs in (pretty on a terminal).
    LOG_FORMAT: logFormat(),
  };
  // Not the launcher's own-process-group flag: the worker is an ordinary child of this process.
  delete workerEnv.WEBHOOKS_START_OWN_GROUP;
  const worker = workerProcess({ name: 'worker', env: workerEnv, log: 'inherit', respawn: { say }, source: true });
  stops.unshift(() => worker.stop());
  // It bundles its workflow code for seconds: the API starts meanwhile.
  const workerStarted = worker.start();
  // This machine only, unless HOST says otherwise: a development API holds live keys and dev mode's lowered guard.
  const host = config.host ?? DEV_HOST;
  const api = await startApi({ ...config, ...provider, databaseUrl, temporalAddress, host });
  const base = api.url.startsWith('http://127.0.0.1:') ? `http://localhost:${config.port}` : api.url;
  say('');
  say(
    `API:             ${base}  (reference: ${base}/docs; listening on ${host}${host === DEV_HOST ? ', this machine only: HOST=0.0.0.0 opens it to the network' : ''})`,
  );
  say(`Temporal Web UI: ${uiUrl ?? `(external Temporal at ${temporalAddress})`}`);
  say(`Temporal:        ${temporalAddress}`);
  say('Ctrl-C stops everything.');
  say('');
  say('Next, in another terminal (README.md, "Five-minute quickstart"):');
  if (!keys.liveKey) say(`  KEY=$(${keys.keyCommand} | node -pe 'JSON.parse(require("fs").readFileSync(0)).key')`);
  say(`  npx webhooks login --key ${keys.liveKey ?? '$KEY'} --base-url ${base}/api/v1`);
  say('  npx webhooks listen --port 4000 --secret whsec_quickstart_0123456789');

  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    say('Stopping...');
    await api.close().catch(() => {});
    for (const stop of stops) await stop().catch(() => {});
    process.exit(0);
  };
  started();
  for (const signal of STOP_SIGNALS) process.on(signal, shutdown);
  onParentGone(() => void shutdown());
  workerStarted.catch((err) => {
    console.error('worker did not start:', err instanceof Error ? err.message : err);
    void shutdown();
  });
}

// This process and its parent handle the stop signals themselves (in both, it imports embedded-postgres).
leaveSignalsToCaller();
if (!runInOwnProcessGroup())
  main().catch(async (err) => {
    console.error(err instanceof Error ? err.message : err);
    for (const stop of stops) await stop().catch(() => {});
    process.exit(1);
  });
