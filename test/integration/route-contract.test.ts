/**
 * The OpenAPI document and the Koa router describe the same /api/v1 routes: every served
 * method and path is documented, every documented one is served, each with the same scope.
 * (The SDK's route table is checked against the document in test/kit/sdk-contract.test.ts.)
 */
import type Router from '@koa/router';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import type { ApiDeps } from '../../src/api/deps.js';
import { buildOpenApiDocument } from '../../src/api/openapi.js';

const PREFIX = '/api/v1/';
/** The document itself: served without a key and not an operation of the API. */
const UNDOCUMENTED = new Set(['get /api/v1/openapi.json']);

/** `method path` → scope (or '' when the route checks none), from the app's routers. */
function servedRoutes(): Map<string, string> {
  // Building the routers touches no dependency; the handlers, which would, never run here.
  const deps = { config: { rateLimit: { capacity: 1, refillPerSecond: 1 } } } as unknown as ApiDeps;
  const served = new Map<string, string>();
  for (const middleware of createApp(deps).middleware) {
    const router = (middleware as { router?: Router }).router;
    for (const layer of router?.stack ?? []) {
      const path = String(layer.path);
      if (!path.startsWith(PREFIX) || layer.methods.length === 0) continue;
      const scope = layer.stack.map((fn) => (fn as { scope?: string }).scope).find(Boolean) ?? '';
      const key = path.replace(/:(\w+)/g, '{$1}');
      for (const method of layer.methods)
        if (method !== 'HEAD' && !UNDOCUMENTED.has(`${method.toLowerCase()} ${key}`)) served.set(`${method.toLowerCase()} ${key}`, scope);
    }
  }
  return served;
}

function documentedRoutes(): Map<string, string> {
  const documented = new Map<string, string>();
  for (const [path, item] of Object.entries(buildOpenApiDocument().paths ?? {})) {
    if (!path.startsWith(PREFIX)) continue;
    for (const [method, op] of Object.entries(item as Record<string, { security?: Record<string, string[]>[] }>))
      documented.set(`${method} ${path}`, op.security?.[0]?.ApiKey?.[0] ?? '');
  }
  return documented;
}

describe('route contract', () => {
  it('Koa serves exactly the documented /api/v1 routes, each with its documented scope', () => {
    const served = servedRoutes();
    const documented = documentedRoutes();
    expect(served.size).toBeGreaterThan(30);
    expect(Object.fromEntries(served)).toEqual(Object.fromEntries(documented));
  });

  it('every documented /api/v1 route asks for the API key', () => {
    for (const [path, item] of Object.entries(buildOpenApiDocument().paths ?? {}))
      if (path.startsWith(PREFIX))
        for (const op of Object.values(item as Record<string, { security?: unknown[] }>)) expect(op.security).toBeDefined();
  });
});
