/**
 * A minimal client of the platform's REST API: the four calls this server needs, over global
 * fetch. Errors follow the platform's envelope; failures that never reached the API use the
 * client-side codes of the contract (`network_error`, `malformed_response`, status 0).
 */
export class WebhooksApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'WebhooksApiError';
  }
}

export type Query = Record<string, string | number | undefined>;

export interface ApiClient {
  get<T = unknown>(path: string, query?: Query): Promise<T>;
  post<T = unknown>(path: string, body?: unknown): Promise<T>;
}

export interface ApiClientOptions {
  /** The service root (`http://localhost:3000`); a trailing `/api/v1` is accepted too. */
  baseUrl: string;
  apiKey: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export function createApiClient(opts: ApiClientOptions): ApiClient {
  const root = `${opts.baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}/api/v1`;
  const doFetch = opts.fetch ?? fetch;

  async function call<T>(method: string, path: string, query?: Query, body?: unknown): Promise<T> {
    const url = new URL(root + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    let res: Response;
    try {
      res = await doFetch(url, {
        method,
        headers: {
          'x-api-key': opts.apiKey,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new WebhooksApiError(0, 'network_error', `${method} ${url.pathname}: ${(err as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new WebhooksApiError(0, 'malformed_response', `${method} ${url.pathname}: answer ${res.status} is not JSON`);
    }
    // The envelope is an error even on a 2xx.
    const envelope = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
    if (envelope && typeof envelope.code === 'string')
      throw new WebhooksApiError(res.status, envelope.code, String(envelope.message ?? envelope.code));
    if (!res.ok)
      throw new WebhooksApiError(
        res.status,
        'malformed_response',
        `${method} ${url.pathname}: answer ${res.status} without an error envelope`,
      );
    return parsed as T;
  }

  return {
    get: (path, query) => call('GET', path, query),
    post: (path, body) => call('POST', path, undefined, body),
  };
}
