/** What every family of OpenAPI paths shares: the error responses, JSON bodies, the id parameter and the scope a route needs. */
import { z } from 'zod';
import type { Scope } from '../../security/api-key.js';
import { ErrorEnvelope } from '../schemas/common.js';

/** 401, 403 and 429 can answer any authenticated route, and 422 too: text Postgres cannot store (NUL, unpaired surrogates) in the path or query. */
export function errors(...codes: number[]) {
  const out: Record<number, { description: string; content: { 'application/json': { schema: typeof ErrorEnvelope } } }> = {};
  for (const code of [401, 403, 422, 429, ...codes])
    out[code] = { description: 'Error envelope', content: { 'application/json': { schema: ErrorEnvelope } } };
  return out;
}

export const json = <T extends z.ZodType>(schema: T, description = 'OK') => ({ description, content: { 'application/json': { schema } } });
export const idParam = z.object({ id: z.uuid() });

/**
 * The X-API-Key requirement with the scope the route checks (OpenAPI lets an apiKey scheme list
 * the roles it needs); test/integration/route-contract.test.ts compares it with the Koa router's.
 */
export const auth = (scope?: Scope) => [{ ApiKey: scope ? [scope] : [] }];
