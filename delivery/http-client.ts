/**
 * The one HTTP client that talks to receivers. Destinations are re-checked at connect
 * time inside the socket's DNS lookup, so a name that resolved to a public address when
 * the endpoint was created but points inside the network now is refused (DNS rebinding).
 * Keep-alive connections are pooled per origin; redirects are never followed.
 */
import fs from 'node:fs';
import type { LookupFunction } from 'node:net';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, request } from 'undici';
import { storableExcerpt } from '../core/storable-text.js';
import { BlockedDestinationError, type DestinationPolicy } from '../security/destination-policy.js';

export type AttemptError = 'timeout' | 'connection_error' | 'tls_error' | 'blocked_destination' | 'non_2xx';

export interface PostResult {
  /** HTTP status, or null when no response arrived. */
  status: number | null;
  headers: Record<string, string | string[] | undefined>;
  /** The first 4 KiB of the response body, as text Postgres can store. */
  excerpt: string | null;
  error: AttemptError | null;
  errorMessage: string | null;
  durationMs: number;
}

export interface HttpClient {
  post(url: string, headers: Record<string, string>, body: Buffer): Promise<PostResult>;
  close(): Promise<void>;
}

const EXCERPT_BYTES = 4096;

/**
 * Node's bundled roots plus NODE_EXTRA_CA_CERTS, read now so a test CA set after start-up is
 * honoured too, plus the dev-mode CA file, as one TLS context: built per connection, parsing the
 * ~150 roots cost milliseconds of CPU for every new receiver connection.
 */
function trustedCas(devCaFile?: string): { secureContext: tls.SecureContext } {
  const extras = [process.env.NODE_EXTRA_CA_CERTS, devCaFile].filter((f): f is string => Boolean(f) && fs.existsSync(f!));
  return { secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, ...extras.map((f) => fs.readFileSync(f, 'utf8'))] }) };
}

/**
 * Dev mode: the CA file is read again whenever it changes, so a `webhooks listen` started (or
 * its certificate made) after the service is trusted without a restart. New connections only.
 */
function reloadingConnector(base: buildConnector.BuildOptions, devCaFile: string): buildConnector.connector {
  let current: { stamp: number; connector: buildConnector.connector } | undefined;
  return (options, callback) => {
    const stamp = fs.existsSync(devCaFile) ? fs.statSync(devCaFile).mtimeMs : -1;
    if (current?.stamp !== stamp) current = { stamp, connector: buildConnector({ ...base, ...trustedCas(devCaFile) }) };
    return current.connector(options, callback);
  };
}

function guardedLookup(policy: DestinationPolicy): LookupFunction {
  return (hostname, options, callback) => {
    policy.resolveAllowed(hostname).then(
      (addresses) => {
        const entries = addresses.map((address) => ({ address, family: ipaddr.parse(address).kind() === 'ipv6' ? 6 : 4 }));
        const wanted = options.family ? entries.filter((e) => e.family === options.family) : entries;
        const list = wanted.length ? wanted : entries;
        if (options.all) (callback as (e: null, a: typeof list) => void)(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

function classify(err: unknown): { error: AttemptError; message: string } {
  const e = err as { name?: string; code?: string; message?: string; cause?: unknown };
  if (e instanceof BlockedDestinationError || e?.cause instanceof BlockedDestinationError) {
    return { error: 'blocked_destination', message: (e instanceof BlockedDestinationError ? e : (e.cause as Error)).message };
  }
  const inner = (e?.cause ?? e) as { name?: string; code?: string; message?: string };
  const code = inner?.code ?? e?.code ?? '';
  const name = inner?.name ?? e?.name ?? '';
  const message = inner?.message ?? e?.message ?? 'request failed';
  if (name === 'TimeoutError' || name === 'AbortError' || /TIMEOUT/.test(code))
    return { error: 'timeout', message: 'no response within the timeout' };
  if (/^ERR_TLS|^ERR_SSL|CERT|SELF_SIGNED|UNABLE_TO_VERIFY|^EPROTO$/.test(code)) return { error: 'tls_error', message };
  return { error: 'connection_error', message };
}

export function createHttpClient(opts: {
  policy: DestinationPolicy;
  timeoutMs: number;
  maxConnectionsPerOrigin?: number;
  devCaFile?: string;
}): HttpClient {
  const connect = { lookup: guardedLookup(opts.policy), timeout: opts.timeoutMs };
  const agent = new Agent({
    connections: opts.maxConnectionsPerOrigin ?? 16,
    keepAliveTimeout: 30_000,
    connect: opts.devCaFile ? reloadingConnector(connect, opts.devCaFile) : { ...connect, ...trustedCas() },
  });

  return {
    async post(url, headers, body) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      try {
        // An IP literal never reaches the lookup hook, so it is checked here.
        const { hostname } = new URL(url);
        const host = hostname.replace(/^\[|\]$/g, '');
        if (ipaddr.isValid(host)) {
          const why = opts.policy.refusal(host);
          if (why) throw new BlockedDestinationError(why);
        }
        const res = await request(url, {
          method: 'POST',
          headers,
          body,
          dispatcher: agent,
          signal: AbortSignal.timeout(opts.timeoutMs),
        });
        const excerpt = await readExcerpt(res.body);
        const error = res.statusCode >= 200 && res.statusCode < 300 ? null : 'non_2xx';
        return {
          status: res.statusCode,
          headers: res.headers,
          excerpt,
          error,
          errorMessage: error ? `receiver answered ${res.statusCode}` : null,
          durationMs: elapsed(),
        };
      } catch (err) {
        const { error, message } = classify(err);
        return { status: null, headers: {}, excerpt: null, error, errorMessage: message, durationMs: elapsed() };
      }
    },
    close: () => agent.close(),
  };
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= EXCERPT_BYTES) break;
    }
  } catch {
    // A body cut off mid-way still leaves what arrived.
  } finally {
    body.destroy();
  }
  if (size === 0) return null;
  return storableExcerpt(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES), { truncated: size >= EXCERPT_BYTES });
}
