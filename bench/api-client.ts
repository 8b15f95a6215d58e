/** The benchmarks' REST client: JSON requests with an API key through one undici pool, as a tenant's publisher sends them. */
import type { Pool } from 'undici';

export type ApiCall = (method: string, urlPath: string, key: string, body?: unknown) => Promise<{ status: number; body: any }>;

export function apiCaller(pool: Pool): ApiCall {
  return async (method, urlPath, key, body) => {
    const res = await pool.request({
      method: method as 'POST',
      path: urlPath,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    return { status: res.statusCode, body: text ? JSON.parse(text) : null };
  };
}
