/**
 * Every route that takes a JSON body, walked from the OpenAPI document (which the route contract
 * test holds equal to the router): a body that is JSON but not an object is 422 invalid_request
 * in the error envelope, never a 500 from a route reading fields of `null`.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../../src/api/openapi.js';
import { createTenant, PROVIDER_APP_SECRET, startTestApi, type Tenant, type TestApi } from '../support/harness.js';

const NOT_OBJECTS: [string, string][] = [
  ['null', 'null'],
  ['an array', '[]'],
  ['an array of an object', '[{}]'],
  ['a number', '42'],
  ['a string', '"recipients"'],
  ['true', 'true'],
];

/** Signed by the provider, checked against its signature before anything else: never a 500. */
const PROVIDER_WEBHOOKS = new Set(['post /provider/chatapp/webhook', 'post /provider/photoapp/webhook']);

function bodyTakingRoutes(): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  for (const [path, item] of Object.entries(buildOpenApiDocument().paths ?? {}))
    for (const [method, op] of Object.entries(item as Record<string, { requestBody?: unknown }>))
      if (op.requestBody) routes.push({ method, path });
  return routes;
}

let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant();
});
afterAll(() => api.close());

describe('a JSON body that is not an object', () => {
  const routes = bodyTakingRoutes();

  it('the walk finds every body-taking route of the document', () => {
    expect(routes.length).toBeGreaterThanOrEqual(15);
    expect(routes.map((r) => `${r.method} ${r.path}`)).toContain('post /api/v1/broadcasts/{id}/recipients');
  });

  for (const { method, path } of routes) {
    const route = `${method} ${path}`;
    const expected = PROVIDER_WEBHOOKS.has(route) ? 'never a 500 (a signed provider webhook)' : 'each 422 invalid_request';
    it(`${route}: null, an array, a number, a string and true are ${expected}`, async () => {
      // Any id: the body is refused before the route looks anything up.
      const url = path.replace(/\{\w+\}/g, crypto.randomUUID());
      for (const [, raw] of NOT_OBJECTS) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (PROVIDER_WEBHOOKS.has(route))
          headers['x-hub-signature-256'] = `sha256=${crypto.createHmac('sha256', PROVIDER_APP_SECRET).update(raw).digest('hex')}`;
        const res = await api.request(method.toUpperCase(), url, { key: tenant.key, rawBody: raw, headers });
        expect({ raw, status: res.status }).not.toMatchObject({ status: expect.toSatisfy((s: number) => s >= 500) });
        if (PROVIDER_WEBHOOKS.has(route)) continue;
        expect({ raw, status: res.status, code: res.body?.error?.code }).toEqual({ raw, status: 422, code: 'invalid_request' });
        expect(res.body.error.message).toBe('request body must be a JSON object');
      }
    });
  }
});
