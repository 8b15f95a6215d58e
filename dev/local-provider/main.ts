/**
 * `tsx dev/local-provider/main.ts`: the local provider on its own, for development. Point the
 * platform at it with PROVIDER_API_URL (printed) and the same PROVIDER_ACCESS_TOKEN and
 * PROVIDER_APP_SECRET. LOCAL_PROVIDER_PORT (default 4100) and PLATFORM_URL (default
 * http://127.0.0.1:$PORT) say where it listens and where its notifications go.
 */
import { logger } from '../../src/runtime/logger.js';
import { startLocalProvider } from './server.js';

const env = process.env;
const provider = await startLocalProvider({
  port: Number(env.LOCAL_PROVIDER_PORT ?? 4100),
  platformUrl: env.PLATFORM_URL ?? `http://127.0.0.1:${env.PORT ?? 3000}`,
  appSecret: env.PROVIDER_APP_SECRET ?? 'local-provider-app-secret',
  accessToken: env.PROVIDER_ACCESS_TOKEN ?? 'local-provider-access-token',
  statusDelayMs: env.LOCAL_PROVIDER_STATUS_DELAY_MS ? Number(env.LOCAL_PROVIDER_STATUS_DELAY_MS) : undefined,
});
logger.info({ PROVIDER_API_URL: provider.url, control: `${provider.rootUrl}/_local` }, 'local provider listening');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void provider.close().then(() => process.exit(0));
  });
}
