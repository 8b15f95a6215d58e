/**
 * The platform's HTTP client for the messaging provider: a Graph-API-like REST API under a
 * versioned base url (PROVIDER_API_URL). The same client talks to the real provider and to the
 * local provider of development and tests (dev/local-provider). Refusals in the Graph error
 * shape `{ error: { message, type, code, error_subcode } }`, and a provider that cannot be
 * reached, both become ProviderError, so callers decide between 502/503 and never leak a 500.
 */
import { request } from 'undici';

/** The provider refused (its HTTP status and Graph codes) or was unreachable (status 0). */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly providerCode?: number,
    readonly providerSubcode?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

export interface ProviderHttp {
  get<T>(path: string, query?: Record<string, string>, token?: string): Promise<T>;
  post<T>(path: string, body: unknown, token?: string): Promise<T>;
}

const DEFAULT_TIMEOUT_MS = 10_000;

interface GraphErrorBody {
  error?: { message?: unknown; code?: unknown; error_subcode?: unknown };
}

function refusal(status: number, text: string): ProviderError {
  let body: GraphErrorBody | undefined;
  try {
    body = JSON.parse(text) as GraphErrorBody;
  } catch {
    body = undefined;
  }
  const e = body?.error;
  const message = typeof e?.message === 'string' ? e.message : `provider answered HTTP ${status}`;
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  return new ProviderError(status, message, num(e?.code), num(e?.error_subcode));
}

export function createProviderHttp(opts: { baseUrl: string; accessToken: string; timeoutMs?: number }): ProviderHttp {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const timeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  async function call<T>(method: 'GET' | 'POST', path: string, query: Record<string, string> | undefined, body: unknown, token?: string) {
    const url = new URL(base + (path.startsWith('/') ? path : `/${path}`));
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
    const headers: Record<string, string> = { authorization: `Bearer ${token ?? opts.accessToken}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res;
    try {
      res = await request(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
    } catch (err) {
      throw new ProviderError(0, `provider unreachable: ${(err as Error).message}`);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw new ProviderError(0, `provider answer lost: ${(err as Error).message}`);
    }
    if (res.statusCode < 200 || res.statusCode > 299) throw refusal(res.statusCode, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ProviderError(res.statusCode, 'provider answered a body that is not JSON');
    }
  }

  return {
    get: (path, query, token) => call('GET', path, query, undefined, token),
    post: (path, body, token) => call('POST', path, undefined, body, token),
  };
}
