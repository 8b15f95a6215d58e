/**
 * The platform's HTTP client for the messaging provider: a Graph-API-like REST API under a
 * versioned base url (PROVIDER_API_URL). The same client talks to the real provider and to the
 * local provider of development and tests (dev/local-provider). Refusals in the Graph error
 * shape `{ error: { message, type, code, error_subcode } }`, and a provider that cannot be
 * reached, both become ProviderError, so callers decide between 502/503 and never leak a 500.
 */
import { request } from 'undici';

/**
 * The provider refused (its HTTP status and Graph codes) or was unreachable (status 0).
 * `outcomeUnknown`: the request may have reached the provider and been acted on (a timeout
 * waiting for the answer, a connection lost after the request was written, a 2xx answer that
 * could not be read), so a POST must not be taken as not done.
 */
export class ProviderError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly providerCode?: number,
    readonly providerSubcode?: number,
    readonly outcomeUnknown = false,
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

/**
 * Failures that happen before a byte of the request leaves: the provider cannot have seen it.
 * Anything else (a headers or body timeout, a socket closed or reset mid-exchange) may come
 * after the provider took the request in.
 */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_INVALID_ARG',
  'ERR_INVALID_URL',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: unknown } | null)?.cause;
  return cause && cause !== err ? errorCode(cause) : undefined;
}

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
      const code = errorCode(err);
      const unknown = method === 'POST' && !(code && NOT_SENT_CODES.has(code));
      const what = unknown ? 'provider did not answer' : 'provider unreachable';
      throw new ProviderError(0, `${what}: ${(err as Error).message}`, undefined, undefined, unknown);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw new ProviderError(0, `provider answer lost: ${(err as Error).message}`, undefined, undefined, method === 'POST');
    }
    if (res.statusCode < 200 || res.statusCode > 299) throw refusal(res.statusCode, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      // A 2xx is an acceptance even when its body cannot be read.
      throw new ProviderError(res.statusCode, 'provider answered a body that is not JSON', undefined, undefined, method === 'POST');
    }
  }

  return {
    get: (path, query, token) => call('GET', path, query, undefined, token),
    post: (path, body, token) => call('POST', path, undefined, body, token),
  };
}
