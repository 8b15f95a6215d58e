/**
 * The production shape on one machine, without Docker, as a programmatic API (`npm run production`
 * is its command line; tests and the benchmark drive it too): Postgres (embedded, or DATABASE_URL),
 * a real Temporal server on that Postgres with its Web UI, N compiled API processes sharing one
 * port and M compiled worker processes. Every process has a handle: kill -9, restart, stop; one
 * that crashes (the embedded Postgres too) is started again after a backoff (1 s, doubling up to 30 s).
 */
import fs from 'node:fs';
import path from 'node:path';
import { listenUrl } from '../src/api/server.js';
import { migrate } from '../src/db/migrate.js';
import { SERVICE_HOST } from '../src/runtime/config.js';
import { loadOrCreateEncryptionKey } from '../src/security/secret-box.js';
import type { ManagedProcess } from './children.js';
import { supervisedEmbeddedPostgres } from './embedded-postgres.js';
import { freePort } from './ports.js';
import { apiProcess, workerProcess, type LogTarget } from './service-processes.js';
import { startTemporalCluster } from './temporal-cluster.js';

export interface ProductionShapeOptions {
  /** Everything of the shape lives here: Postgres data, Temporal's configuration, logs. */
  dataDir: string;
  /** An existing Postgres (its user may create databases); embedded Postgres in dataDir otherwise. */
  databaseUrl?: string;
  apiProcesses?: number;
  workerProcesses?: number;
  /** Free ports when unset. */
  apiPort?: number;
  temporalPort?: number;
  uiPort?: number;
  namespace?: string;
  taskQueue?: string;
  /** Added to the API and worker processes' environment (e.g. WEBHOOKS_DEV_MODE, NODE_EXTRA_CA_CERTS). */
  env?: Record<string, string | undefined>;
  /** Server settings for the embedded Postgres beyond its defaults (the benchmark loads pg_stat_statements). */
  postgresSettings?: Record<string, string>;
  /** Node's flags for an API or worker process, by its name (`api-1`, `worker-2`): a benchmark's CPU profiles. */
  nodeArgs?: (name: string) => string[];
  /** 'inherit' prints the API and worker logs here; by default each process logs to dataDir/logs/<name>.log. */
  logs?: 'files' | 'inherit';
  /** Progress lines, and each part as it stops. */
  say?: (line: string) => void;
}

export interface ProductionShape {
  apiUrl: string;
  uiUrl: string;
  temporalAddress: string;
  databaseUrl: string;
  dataDir: string;
  apis: ManagedProcess[];
  workers: ManagedProcess[];
  temporal: ManagedProcess;
  ui: ManagedProcess;
  /** The embedded Postgres's postmaster; undefined with DATABASE_URL (or a server of the folder already running). */
  postgres: ManagedProcess | undefined;
  /** Stops everything, in order: APIs, workers, Web UI, Temporal, Postgres. */
  stop(): Promise<void>;
}

/** The shape's default folder inside a data folder: apart from `npm start`'s, whose Temporal state is the dev server's. */
export function productionDataDir(dataDir: string): string {
  return path.join(dataDir, 'production');
}

/** "1 process", "2 processes"; with a kind, "1 API process", "2 worker processes". */
export const processCount = (n: number, kind?: string) => `${n} ${kind ? `${kind} ` : ''}${n === 1 ? 'process' : 'processes'}`;

type Stops = Array<{ name: string; stop: () => Promise<void> }>;

/** DATABASE_URL's server, or the embedded one, supervised, with its stop first in line to be the last. */
async function startPostgres(opts: ProductionShapeOptions, dataDir: string, stops: Stops, say: (line: string) => void) {
  if (opts.databaseUrl) return { databaseUrl: opts.databaseUrl, postgres: undefined };
  say('Starting embedded PostgreSQL...');
  const pg = await supervisedEmbeddedPostgres(dataDir, {
    logFile: path.join(dataDir, 'logs', 'postgres.log'),
    settings: opts.postgresSettings,
    respawn: { say },
  });
  stops.unshift({ name: 'Postgres', stop: pg.stop });
  return { databaseUrl: pg.url, postgres: pg.server };
}

export async function startProductionShape(opts: ProductionShapeOptions): Promise<ProductionShape> {
  const say = opts.say ?? (() => {});
  const dataDir = path.resolve(opts.dataDir);
  const logsDir = path.join(dataDir, 'logs');
  fs.mkdirSync(logsDir, { recursive: true });
  const stops: Stops = [];
  const stopAll = async () => {
    for (const { name, stop } of stops.splice(0)) {
      await stop().catch(() => {});
      say(`Stopped ${name}.`);
    }
  };
  try {
    const { databaseUrl, postgres } = await startPostgres(opts, dataDir, stops, say);
    const namespace = opts.namespace ?? 'default';
    const taskQueue = opts.taskQueue ?? 'webhooks';
    say('Setting up the Temporal schema and starting the Temporal server on Postgres...');
    const temporal = await startTemporalCluster({
      dir: path.join(dataDir, 'temporal'),
      databaseUrl,
      namespace,
      frontendPort: opts.temporalPort,
      uiPort: opts.uiPort,
      respawn: { say },
    });
    stops.unshift({ name: 'the Temporal server', stop: () => temporal.server.stop() });
    stops.unshift({ name: 'the Web UI', stop: () => temporal.ui.stop() });
    await migrate(databaseUrl);
    // Created once here, so the processes share one key instead of racing to generate it.
    loadOrCreateEncryptionKey(opts.env?.SECRETS_ENCRYPTION_KEY ?? process.env.SECRETS_ENCRYPTION_KEY, dataDir);

    const apiPort = opts.apiPort ?? (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...opts.env,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_TASK_QUEUE: taskQueue,
      DATA_DIR: dataDir,
      PORT: String(apiPort),
      // Every interface, as the Docker image: the shape is what a deployment runs. HOST narrows it.
      HOST: opts.env?.HOST ?? process.env.HOST ?? SERVICE_HOST,
    };
    // Not the launcher's own-process-group flag: these children are ordinary ones.
    delete env.WEBHOOKS_START_OWN_GROUP;
    const log = (name: string): LogTarget => (opts.logs === 'inherit' ? 'inherit' : { file: path.join(logsDir, `${name}.log`) });
    const processOptions = (name: string) => ({ name, env, log: log(name), respawn: { say }, nodeArgs: opts.nodeArgs?.(name) });
    const workers = Array.from({ length: opts.workerProcesses ?? 2 }, (_, i) => workerProcess(processOptions(`worker-${i + 1}`)));
    const apis = Array.from({ length: opts.apiProcesses ?? 2 }, (_, i) => apiProcess(processOptions(`api-${i + 1}`)));
    stops.unshift({ name: 'the workers', stop: async () => void (await Promise.all(workers.map((w) => w.stop()))) });
    stops.unshift({ name: 'the API processes', stop: async () => void (await Promise.all(apis.map((a) => a.stop()))) });
    say(`Starting ${processCount(workers.length, 'worker')} and ${processCount(apis.length, 'API')}...`);
    await Promise.all([...workers, ...apis].map((p) => p.start()));
    return {
      apiUrl: listenUrl(env.HOST!, apiPort),
      uiUrl: temporal.uiUrl,
      temporalAddress: temporal.address,
      databaseUrl,
      dataDir,
      apis,
      workers,
      temporal: temporal.server,
      ui: temporal.ui,
      postgres,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
