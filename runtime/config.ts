import path from 'node:path';

/** Everything the service reads from its environment, resolved once with defaults. */
export interface Config {
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  temporalAddress: string | undefined;
  temporalNamespace: string;
  taskQueue: string;
  /** 32-byte key (base64) for AES-256-GCM of secrets at rest; generated into dataDir in development. */
  encryptionKey: string | undefined;
  endpointLimit: number;
  deliveryTimeoutMs: number;
  rateLimit: { capacity: number; refillPerSecond: number };
  allowPrivateCidrs: string[];
  providerAppSecret: string | undefined;
  providerVerifyToken: string | undefined;
  logLevel: string;
  /** smtp://user:pass@host:587 for owner notifications; unset logs them instead. */
  smtpUrl: string | undefined;
  smtpFrom: string;
  /**
   * WEBHOOKS_DEV_MODE=1, for a local receiver such as `webhooks listen`: loopback receivers are
   * let through the SSRF guard and `devCaFile` is trusted. Never set it in production.
   */
  devMode: boolean;
  /** WEBHOOKS_DEV_CA_FILE: a PEM CA trusted for receivers, in dev mode only (read at each new connection, so it may appear after start). */
  devCaFile: string | undefined;
}

/** What dev mode lets through: the loopback ranges, where a local receiver listens. */
export const DEV_MODE_CIDRS = ['127.0.0.0/8', '::1/128'];

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return value;
}

function list(name: string): string[] {
  return (process.env[name] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const devMode = env.WEBHOOKS_DEV_MODE === '1' || env.WEBHOOKS_DEV_MODE === 'true';
  const allowPrivateCidrs = list('WEBHOOK_ALLOW_PRIVATE_CIDRS');
  return {
    port: int('PORT', 3000),
    dataDir: path.resolve(env.DATA_DIR || '.data'),
    databaseUrl: env.DATABASE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.TEMPORAL_TASK_QUEUE || 'webhooks',
    encryptionKey: env.SECRETS_ENCRYPTION_KEY || undefined,
    endpointLimit: int('ENDPOINT_LIMIT', 50),
    deliveryTimeoutMs: int('DELIVERY_TIMEOUT_MS', 10_000),
    rateLimit: { capacity: int('RATE_LIMIT_BURST', 100), refillPerSecond: int('RATE_LIMIT_PER_SECOND', 20) },
    allowPrivateCidrs: devMode ? [...new Set([...allowPrivateCidrs, ...DEV_MODE_CIDRS])] : allowPrivateCidrs,
    providerAppSecret: env.PROVIDER_APP_SECRET || undefined,
    providerVerifyToken: env.PROVIDER_VERIFY_TOKEN || undefined,
    logLevel: env.LOG_LEVEL || 'info',
    smtpUrl: env.SMTP_URL || undefined,
    smtpFrom: env.SMTP_FROM || 'Webhook platform <no-reply@localhost>',
    devMode,
    devCaFile: devMode && env.WEBHOOKS_DEV_CA_FILE ? path.resolve(env.WEBHOOKS_DEV_CA_FILE) : undefined,
  };
}
