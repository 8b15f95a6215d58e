/** The test API wired to a local provider (dev/local-provider), both on loopback ports. */
import { startLocalProvider, type LocalProvider } from '../../dev/local-provider/server.js';
import { createProviderHttp } from '../../provider/http.js';
import { PROVIDER_APP_SECRET, startTestApi, type TestApi } from './harness.js';

export const PROVIDER_ACCESS_TOKEN = 'local-provider-access-token-for-tests';

export interface ApiWithProvider {
  api: TestApi;
  provider: LocalProvider;
  /** Calls a test-control route of the local provider (`/_local/...`). */
  control<T = any>(path: string, body?: unknown): Promise<T>;
  close(): Promise<void>;
}

export async function startApiWithProvider(
  opts: Parameters<typeof startTestApi>[0] & { statusDelayMs?: number } = {},
): Promise<ApiWithProvider> {
  const api = await startTestApi(opts);
  const provider = await startLocalProvider({
    platformUrl: api.url,
    appSecret: PROVIDER_APP_SECRET,
    accessToken: PROVIDER_ACCESS_TOKEN,
    statusDelayMs: opts.statusDelayMs,
  });
  // The API reads its deps at each request, so the client can join once the provider's port is known.
  api.deps.providerApi = createProviderHttp({ baseUrl: provider.url, accessToken: PROVIDER_ACCESS_TOKEN });
  return {
    api,
    provider,
    async control(path, body) {
      const res = await fetch(`${provider.rootUrl}/_local${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as unknown;
      if (!res.ok) throw new Error(`local provider ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json as never;
    },
    async close() {
      await provider.close();
      await api.close();
    },
  };
}
