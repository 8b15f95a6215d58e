/** The test API wired to a local provider (dev/local-provider), both on loopback ports. */
import { startLocalProvider, type LocalProvider } from '../../dev/local-provider/server.js';
import { createProviderHttp, type ProviderHttp } from '../../src/channels/provider-http.js';
import { createChannelAccount } from '../../src/db/directory.js';
import { storePhotoappToken } from '../../src/db/photoapp-tokens.js';
import { PROVIDER_APP_SECRET, startTestApi, testDb, type Tenant, type TestApi } from './harness.js';

export const PROVIDER_ACCESS_TOKEN = 'local-provider-access-token-for-tests';

export interface ApiWithProvider {
  api: TestApi;
  provider: LocalProvider;
  /** Calls a test-control route of the local provider (`/_local/...`). */
  control<T = any>(path: string, body?: unknown): Promise<T>;
  /** Runs `fn` with the API's provider client swapped for `providerApi` (undefined: none), then puts the real one back. */
  withProvider<T>(providerApi: ProviderHttp | undefined, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` while the provider answers each send it took `answerDelayMs` late and the API's client gives up after `timeoutMs`. */
  withSlowProvider<T>(o: { answerDelayMs: number; timeoutMs: number }, fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A provider client for a port nothing listens on: every call fails to connect, so nothing is ever sent. */
export const unreachableProvider = (): ProviderHttp => createProviderHttp({ baseUrl: 'http://127.0.0.1:1/v24.0', accessToken: 'x' });

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
  const bed: ApiWithProvider = {
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
    async withProvider(providerApi, fn) {
      const real = api.deps.providerApi;
      api.deps.providerApi = providerApi;
      try {
        return await fn();
      } finally {
        api.deps.providerApi = real;
      }
    },
    async withSlowProvider({ answerDelayMs, timeoutMs }, fn) {
      await bed.control('/settings', { answer_delay_ms: answerDelayMs });
      try {
        return await bed.withProvider(createProviderHttp({ baseUrl: provider.url, accessToken: PROVIDER_ACCESS_TOKEN, timeoutMs }), fn);
      } finally {
        await bed.control('/settings', { answer_delay_ms: 0 });
      }
    },
    async close() {
      await provider.close();
      await api.close();
    },
  };
  return bed;
}

export interface ConnectedNumber {
  channelAccountId: string;
  phoneNumberId: string;
  wabaId: string;
  display: string;
}

/** A business account with one number on the local provider, connected to the tenant as a chatapp channel account. */
export async function connectChatappNumber(
  bed: Pick<ApiWithProvider, 'control'>,
  tenant: Tenant,
  opts: { templates?: Array<Record<string, unknown>>; environment?: 'live' | 'sandbox' } = {},
): Promise<ConnectedNumber> {
  const waba = await bed.control('/wabas', { phone_numbers: [{}] });
  const number = waba.phone_numbers[0] as { id: string; display_phone_number: string };
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    customerId: tenant.customerId,
    channel: 'chatapp',
    display: number.display_phone_number,
    phoneNumberId: number.id,
    wabaId: waba.id,
    environment: opts.environment,
  });
  if (opts.templates) await bed.control(`/wabas/${waba.id}/templates`, { templates: opts.templates });
  return { channelAccountId: ca.id, phoneNumberId: number.id, wabaId: waba.id, display: number.display_phone_number };
}

export interface ConnectedPhotoapp {
  channelAccountId: string;
  /** The provider's id of the account. */
  providerAccountId: string;
  /** Its token as the provider issued it (the platform holds it sealed). */
  accessToken: string;
}

/**
 * A photoapp account on the local provider, connected to the tenant with its own token stored
 * sealed, as a photoapp setup link leaves it (setup-links.test.ts goes through the link itself).
 */
export async function connectPhotoappAccount(
  bed: Pick<ApiWithProvider, 'control' | 'api'>,
  tenant: Tenant,
  opts: { expires_at?: number | null; id?: string; environment?: 'live' | 'sandbox' } = {},
): Promise<ConnectedPhotoapp> {
  const ig = await bed.control('/photoapp_accounts', {
    ...(opts.id ? { id: opts.id } : {}),
    ...(opts.expires_at !== undefined ? { expires_at: opts.expires_at } : {}),
  });
  const ca = await createChannelAccount(testDb(), {
    accountId: tenant.accountId,
    channel: 'photoapp',
    display: '@shop',
    providerAccountId: ig.id,
    environment: opts.environment,
  });
  await storePhotoappToken(testDb(), ca.id, bed.api.deps.secretBox.seal(ig.access_token));
  return { channelAccountId: ca.id, providerAccountId: ig.id, accessToken: ig.access_token };
}
