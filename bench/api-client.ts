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

/** A GET whose answer is counted, not parsed: its body only when it is not a 200, to say why. */
export type ApiRead = (urlPath: string, key: string) => Promise<{ status: number; bytes: number; error?: string }>;

/**
 * Reads as a latency figure wants them: done at the answer's last byte. Parsing 100 stream items
 * (100 KB) is the client's own work, which a 2-core machine would otherwise count into the service's
 * time, and its garbage into the tail of the reads after it.
 */
export function apiReader(pool: Pool): ApiRead {
  return async (urlPath, key) => {
    const res = await pool.request({ method: 'GET', path: urlPath, headers: { 'x-api-key': key } });
    if (res.statusCode !== 200) return { status: res.statusCode, bytes: 0, error: await res.body.text() };
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Buffer).length;
    return { status: res.statusCode, bytes };
  };
}
