/**
 * Everything the service reads from its environment, parsed once, with zod, here. A bad value
 * stops the process at start with every offending variable named, instead of surfacing later.
 * (LOG_LEVEL and LOG_FORMAT are read by the logger itself, which must exist before this runs;
 * NODE_EXTRA_CA_CERTS is Node's own and honoured where Node would.)
 */
import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_RETENTION_DAYS, retentionDaysProblem } from '../core/delivery-partitions.js';
import { deliveryTimeoutProblem, REPORT_EVERY_MS, SESSION_LINGER_MS } from '../core/runtime-limits.js';

/** What dev mode lets through: the loopback ranges, where a local receiver listens. */
export const DEV_MODE_CIDRS = ['127.0.0.0/8', '::1/128'];

/** The line a launcher prints when WEBHOOKS_DEV_MODE is on (in its terminal, not only its logs); undefined when off. */
export function devModeWarning(config: Pick<Config, 'devMode' | 'devCaFile'>): string | undefined {
  if (!config.devMode) return undefined;
  // Loud on purpose: dev mode lowers the SSRF guard, which must never happen in production.
  return (
    'WARNING: WEBHOOKS_DEV_MODE is on: deliveries may go to loopback receivers (127.0.0.0/8, ::1)' +
    (config.devCaFile
      ? ` and ${config.devCaFile} is trusted as a receiver CA`
      : "; set WEBHOOKS_DEV_CA_FILE to trust a local receiver's CA") +
    '. Never use it in production.'
  );
}

/** Where `npm start` listens without HOST: this machine only. */
export const DEV_HOST = '127.0.0.1';
/** Where `npm run api` listens without HOST (the production shape, the Docker image): every interface. */
export const SERVICE_HOST = '0.0.0.0';

/** See Config.warmUpRequests: about where a worker's CPU per POST stopped falling fast. */
const DEFAULT_WARM_UP_REQUESTS = 2_000;
const MAX_WARM_UP_REQUESTS = 20_000;

/** See Config.workerMaxCachedWorkflows. */
const DEFAULT_MAX_CACHED_WORKFLOWS = 250;

const optional = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));
/** An empty value read as unset, before a schema with a default. */
const emptyAsUnset = (v: unknown) => (v === '' ? undefined : v);
const count = (fallback: number) => z.preprocess(emptyAsUnset, z.coerce.number().int().nonnegative().default(fallback));
const port = (fallback: number) => z.preprocess(emptyAsUnset, z.coerce.number().int().min(0).max(65_535).default(fallback));
const flag = z
  .enum(['', '0', '1', 'false', 'true'])
  .optional()
  .transform((v) => v === '1' || v === 'true');
/** A flag that is on unless set to 0 or false. */
const onUnlessOff = z
  .enum(['', '0', '1', 'false', 'true'])
  .optional()
  .transform((v) => v !== '0' && v !== 'false');
const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

const Env = z.object({
  PORT: port(3000),
  HOST: optional,
  DATA_DIR: optional,
  DATABASE_URL: optional,
  TEMPORAL_ADDRESS: optional,
  TEMPORAL_NAMESPACE: optional,
  TEMPORAL_TASK_QUEUE: optional,
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  SECRETS_ENCRYPTION_KEY: optional,
  ENDPOINT_LIMIT: count(50),
  // Bounded by the delivery activity's timeouts (src/core/runtime-limits.ts): a longer POST would overrun it.
  DELIVERY_TIMEOUT_MS: count(10_000).superRefine((v, ctx) => {
    const problem = deliveryTimeoutProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  DELIVERY_LINGER_MS: count(SESSION_LINGER_MS),
  DIRECT_REPORT_EVERY_MS: count(REPORT_EVERY_MS),
  DELIVERY_RETENTION_DAYS: z.preprocess(emptyAsUnset, z.coerce.number().default(DEFAULT_RETENTION_DAYS)).superRefine((v, ctx) => {
    const problem = retentionDaysProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  DUE_SWEEP_MS: count(30_000),
  // Bounded: a process warms up before it is ready, and a start must not take minutes.
  WARM_UP_REQUESTS: count(DEFAULT_WARM_UP_REQUESTS).refine((v) => v <= MAX_WARM_UP_REQUESTS, `at most ${MAX_WARM_UP_REQUESTS}`),
  DIRECT_SESSIONS: onUnlessOff,
  // zlib only while processes of a release before gzip payloads still run (docs/workflow-versions.md).
  PAYLOAD_COMPRESSION: z.preprocess(emptyAsUnset, z.enum(['gzip', 'zlib']).default('gzip')),
  MAINTENANCE_SCHEDULE: onUnlessOff,
  // 0 turns the SDK's sticky cache off (every workflow task replays); the SDK makes 1 into 2.
  WORKER_MAX_CACHED_WORKFLOWS: count(DEFAULT_MAX_CACHED_WORKFLOWS),
  RATE_LIMIT_BURST: count(100),
  RATE_LIMIT_PER_SECOND: count(20),
  WEBHOOK_ALLOW_PRIVATE_CIDRS: list,
  PROVIDER_APP_SECRET: optional,
  PROVIDER_VERIFY_TOKEN: optional,
  PROVIDER_API_URL: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .refine((v) => v === undefined || /^https?:\/\/[^/]/.test(v), 'must be an http(s) url'),
  PROVIDER_ACCESS_TOKEN: optional,
  LOG_LEVEL: optional,
  SMTP_URL: optional,
  SMTP_FROM: optional,
  TRUST_PROXY: flag,
  WEBHOOKS_DEV_MODE: flag,
  WEBHOOKS_DEV_CA_FILE: optional,
});

export interface Config {
  port: number;
  /**
   * HOST: the address the API listens on. Unset, each launcher picks: `npm start` loopback only
   * (DEV_HOST), `npm run api` (the production shape, the Docker image) every interface (SERVICE_HOST).
   */
  host: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  /** Ports `npm start` gives the Temporal dev server and its Web UI (a free one when taken). */
  devServerPorts: { frontend: number; ui: number };
  /** 32-byte key (base64) for AES-256-GCM of secrets at rest; generated into dataDir in development. */
  encryptionKey: string | undefined;
  endpointLimit: number;
  deliveryTimeoutMs: number;
  /** How long a delivery session waits for more work once nothing is due, before it hands back to its workflow. */
  deliveryLingerMs: number;
  /**
   * DIRECT_REPORT_EVERY_MS: at most one report of an endpoint's direct sessions to its workflow this
   * often, per worker (src/delivery/session-reports.ts): the Web UI's story lags by up to this much.
   */
  directReportEveryMs: number;
  /** DELIVERY_RETENTION_DAYS: how long a delivery and its attempts are kept from created_at (src/core/delivery-partitions.ts). */
  deliveryRetentionDays: number;
  /** How often a worker looks for due work nobody took (a lost notification); 0 never. */
  dueSweepMs: number;
  /**
   * WARM_UP_REQUESTS: synthetic publishes an API process answers (src/api/publish-warm-up.ts) and
   * deliveries a worker sends (src/delivery/sending-warm-up.ts) on loopback before they take
   * traffic, so their first real ones run optimised code; 0 none.
   */
  warmUpRequests: number;
  /** DIRECT_SESSIONS (on unless `false`): a worker runs a healthy endpoint's delivery sessions itself, without a workflow task (src/delivery/direct-sessions.ts). */
  directSessions: boolean;
  /** PAYLOAD_COMPRESSION (`gzip`, or `zlib` while processes older than gzip payloads run): how events' payloads are stored (src/db/payload-bytes.ts). */
  payloadCompression: 'gzip' | 'zlib';
  /** MAINTENANCE_SCHEDULE (on unless `false`): the worker creates the deployment's maintenance Schedule at start if it is missing (src/worker/maintenance-schedule.ts). */
  maintenanceSchedule: boolean;
  /**
   * Endpoint workflows a worker keeps in memory between their tasks (the SDK's sticky cache). One that
   * left it replays its (short: it continues as new) history on its next wake-up; each kept one costs
   * worker memory whether its endpoint is busy or not, so this sizes the busy set, not the endpoint count.
   */
  workerMaxCachedWorkflows: number;
  rateLimit: { capacity: number; refillPerSecond: number };
  allowPrivateCidrs: string[];
  providerAppSecret: string | undefined;
  providerVerifyToken: string | undefined;
  /** The provider's Graph base url, versioned (e.g. http://127.0.0.1:4100/v24.0); unset disables sending. */
  providerApiUrl: string | undefined;
  /** The app's access token for the provider's API. */
  providerAccessToken: string | undefined;
  logLevel: string;
  /** smtp://user:pass@host:587 for owner notifications; unset logs them instead. */
  smtpUrl: string | undefined;
  smtpFrom: string;
  /** TRUST_PROXY=1: client addresses come from X-Forwarded-For (behind a trusted proxy only). */
  trustProxy: boolean;
  /**
   * WEBHOOKS_DEV_MODE=1, for a local receiver such as `webhooks listen`: loopback receivers are
   * let through the SSRF guard and `devCaFile` is trusted. Never set it in production.
   */
  devMode: boolean;
  /** WEBHOOKS_DEV_CA_FILE: a PEM CA trusted for receivers, in dev mode only (read at each new connection, so it may appear after start). */
  devCaFile: string | undefined;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message} (got "${env[String(i.path[0])]}")`);
    throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: path.resolve(e.DATA_DIR ?? '.data'),
    databaseUrl: e.DATABASE_URL,
    temporalAddress: e.TEMPORAL_ADDRESS,
    temporalNamespace: e.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: e.TEMPORAL_TASK_QUEUE ?? 'webhooks',
    devServerPorts: { frontend: e.TEMPORAL_PORT, ui: e.TEMPORAL_UI_PORT },
    encryptionKey: e.SECRETS_ENCRYPTION_KEY,
    endpointLimit: e.ENDPOINT_LIMIT,
    deliveryTimeoutMs: e.DELIVERY_TIMEOUT_MS,
    deliveryLingerMs: e.DELIVERY_LINGER_MS,
    directReportEveryMs: e.DIRECT_REPORT_EVERY_MS,
    deliveryRetentionDays: e.DELIVERY_RETENTION_DAYS,
    dueSweepMs: e.DUE_SWEEP_MS,
    warmUpRequests: e.WARM_UP_REQUESTS,
    directSessions: e.DIRECT_SESSIONS,
    payloadCompression: e.PAYLOAD_COMPRESSION,
    maintenanceSchedule: e.MAINTENANCE_SCHEDULE,
    workerMaxCachedWorkflows: e.WORKER_MAX_CACHED_WORKFLOWS,
    rateLimit: { capacity: e.RATE_LIMIT_BURST, refillPerSecond: e.RATE_LIMIT_PER_SECOND },
    allowPrivateCidrs: e.WEBHOOKS_DEV_MODE
      ? [...new Set([...e.WEBHOOK_ALLOW_PRIVATE_CIDRS, ...DEV_MODE_CIDRS])]
      : e.WEBHOOK_ALLOW_PRIVATE_CIDRS,
    providerAppSecret: e.PROVIDER_APP_SECRET,
    providerVerifyToken: e.PROVIDER_VERIFY_TOKEN,
    providerApiUrl: e.PROVIDER_API_URL,
    providerAccessToken: e.PROVIDER_ACCESS_TOKEN,
    logLevel: e.LOG_LEVEL ?? 'info',
    smtpUrl: e.SMTP_URL,
    smtpFrom: e.SMTP_FROM ?? 'Webhook platform <no-reply@localhost>',
    trustProxy: e.TRUST_PROXY,
    devMode: e.WEBHOOKS_DEV_MODE,
    devCaFile: e.WEBHOOKS_DEV_MODE && e.WEBHOOKS_DEV_CA_FILE ? path.resolve(e.WEBHOOKS_DEV_CA_FILE) : undefined,
  };
}
