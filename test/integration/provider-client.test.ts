/** The platform's provider client against the local provider: answers, Graph errors, unreachable, signed notifications. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProviderHttp, ProviderError } from '../../src/channels/provider-http.js';
import { startApiWithProvider, PROVIDER_ACCESS_TOKEN, type ApiWithProvider } from '../support/local-provider.js';

let bed: ApiWithProvider;
beforeAll(async () => {
  bed = await startApiWithProvider();
});
afterAll(() => bed.close());

const client = () => createProviderHttp({ baseUrl: bed.provider.url, accessToken: PROVIDER_ACCESS_TOKEN });

async function refusalOf(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe('provider client', () => {
  it('reads a business account’s numbers', async () => {
    const waba = await bed.control('/wabas', { phone_numbers: [{ display_phone_number: '+1 555 0100', messaging_limit_tier: 'TIER_2K' }] });
    const res = await client().get<{ data: Array<Record<string, unknown>> }>(`/${waba.id}/phone_numbers`);
    expect(res.data).toEqual([
      {
        id: waba.phone_numbers[0].id,
        display_phone_number: '+1 555 0100',
        quality_rating: 'GREEN',
        messaging_limit_tier: 'TIER_2K',
        status: 'CONNECTED',
      },
    ]);
  });

  it('turns a Graph error into ProviderError with the provider’s codes', async () => {
    const err = await refusalOf(client().get('/424242/phone_numbers'));
    expect(err).toMatchObject({ status: 400, providerCode: 100, providerSubcode: 33 });
    expect(err.message).toContain('does not exist');
  });

  it('sends the app token, or the one given; a bad token is a 190 refusal', async () => {
    const waba = await bed.control('/wabas', {});
    await expect(client().get(`/${waba.id}/phone_numbers`)).resolves.toEqual({ data: [] });
    const err = await refusalOf(client().get(`/${waba.id}/phone_numbers`, undefined, 'not-a-token'));
    expect(err).toMatchObject({ status: 401, providerCode: 190 });
  });

  it('posts a body and reads the answer', async () => {
    const waba = await bed.control('/wabas', { phone_numbers: [{}] });
    await bed.control('/settings', { auto_statuses: false });
    const res = await client().post<{ messages: Array<{ id: string }> }>(`/${waba.phone_numbers[0].id}/messages`, {
      messaging_product: 'whatsapp',
      to: '15550001111',
      type: 'text',
      text: { body: 'hi' },
    });
    expect(res.messages[0]!.id).toMatch(/^wamid\./);
    await bed.control('/settings', { auto_statuses: true });
  });

  it('an unreachable provider is ProviderError with status 0', async () => {
    const dead = createProviderHttp({ baseUrl: 'http://127.0.0.1:1/v24.0', accessToken: 'x' });
    const err = await refusalOf(dead.get('/1/phone_numbers'));
    expect(err.status).toBe(0);
  });

  it('a refusal that is not Graph-shaped still becomes ProviderError', async () => {
    const err = await refusalOf(createProviderHttp({ baseUrl: bed.api.url, accessToken: 'x' }).get('/nowhere'));
    expect(err.status).toBe(404);
    expect(err.providerCode).toBeUndefined();
  });
});

describe('local provider notifications', () => {
  it('are signed with the app secret and accepted by the platform’s ingress', async () => {
    const waba = await bed.control('/wabas', { phone_numbers: [{}] });
    const res = await bed.control(`/phone_numbers/${waba.phone_numbers[0].id}/quality`, { messaging_limit_tier: 'TIER_10K' });
    expect(res.notification_status).toBe(200);
  });
});
