/**
 * The one HTTP client that talks to receivers. Destinations are re-checked at connect
 * time inside the socket's DNS lookup, so a name that resolved to a public address when
 * the endpoint was created but points inside the network now is refused (DNS rebinding).
 * Keep-alive connections are pooled per origin; redirects are never followed. Endpoints that
 * share an origin share it fairly (src/delivery/origin-slots.ts): a POST starts once its endpoint's
 * share of the origin allows it, and its timeout runs from then on.
 */
import fs from 'node:fs';
import type { LookupFunction } from 'node:net';
import tls from 'node:tls';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { ORIGIN_CAP } from '../core/fair-share.js';
import type { AttemptError } from '../core/health.js';
import { storableExcerpt } from '../core/storable-text.js';
import { BlockedDestinationError, type DestinationPolicy } from '../security/destination-policy.js';
import { createOriginSlots, originOf, type OriginSlots, type Slot } from './origin-slots.js';
import { merged } from '../core/merged.js';

export type { Slot };

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

/** Where a POST goes, and for whom: the endpoint whose share of the URL's origin it uses. */
export interface PostTarget {
  endpointId: string;
  url: string;
  /** A slot already taken with `slot()` for this origin (the caller releases it); taken and released here when absent. */
  slot?: Slot;
}

export interface HttpClient {
  /**
   * Waits for the endpoint's fair share of the URL's origin to allow one more POST; null when
   * `signal` aborts first. A wait is no attempt: it is not timed, and no receiver failed.
   */
  slot(endpointId: string, url: string, signal?: AbortSignal): Promise<Slot | null>;
  post(target: PostTarget, headers: Record<string, string>, body: Buffer): Promise<PostResult>;
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
  const stampOf = () => (fs.existsSync(devCaFile) ? fs.statSync(devCaFile).mtimeMs : -1);
  const build = (stamp: number) => ({ stamp, connector: buildConnector(merged(base, trustedCas(devCaFile))) });
  // Built now, not on the first POST: parsing the roots took that POST some 60 ms of CPU.
  let current = build(stampOf());
  return (options, callback) => {
    const stamp = stampOf();
    if (current.stamp !== stamp) current = build(stamp);
    return current.connector(options, callback);
  };
}

/** Tells the slots while a connection to an origin is being opened (TCP, TLS). */
function countedConnector(connector: buildConnector.connector, slots: OriginSlots): buildConnector.connector {
  return (options, callback) => {
    // As the slots name it (a default port dropped), so the count reaches the queue of the URL's origin.
    const origin = originOf(`${options.protocol}//${options.hostname}${options.port ? `:${options.port}` : ''}`);
    slots.connecting(origin, 1);
    let open = true;
    const opened = () => {
      if (open) slots.connecting(origin, -1);
      open = false;
    };
    try {
      return connector(options, (...result) => {
        opened();
        (callback as (...a: typeof result) => void)(...result);
      });
    } catch (err) {
      // Never left counted as opening: the origin's newcomers would wait for slots for good.
      opened();
      throw err;
    }
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
  const slots = createOriginSlots(opts.maxConnectionsPerOrigin ?? ORIGIN_CAP);
  const connector = opts.devCaFile ? reloadingConnector(connect, opts.devCaFile) : buildConnector(merged(connect, trustedCas()));
  const agent = new Agent({
    // No limit here: the slots are the limit, and may pass the cap by one per active endpoint
    // (src/core/fair-share.ts). A limit in the pool would queue POSTs first come, first served again.
    connections: null,
    keepAliveTimeout: 30_000,
    connect: countedConnector(connector, slots),
  });

  return {
    slot: (endpointId, url, signal) => slots.take(endpointId, url, signal),
    async post(target, headers, body) {
      const own = target.slot ? null : await slots.take(target.endpointId, target.url);
      try {
        return await postOnce(agent, opts, target.url, headers, body);
      } finally {
        own?.release();
      }
    },
    close: () => agent.close(),
  };
}

/** One POST on a connection of the pool; timed from here, never from a wait for a slot. */
async function postOnce(
  agent: Agent,
  opts: { policy: DestinationPolicy; timeoutMs: number },
  url: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const target = targetOf(url);
    // An IP literal never reaches the lookup hook, so it is checked here.
    if (target.ipLiteral) {
      const why = opts.policy.refusal(target.ipLiteral);
      if (why) throw new BlockedDestinationError(why);
    }
    const res = await dispatchPost(agent, target, headers, body, opts.timeoutMs);
    const durationMs = elapsed();
    // The pool has the connection back a turn after its body ended: a POST sent at once (a
    // session's lane goes on to its next) would find it busy and open another, a TLS handshake
    // for nothing (a cold session of 16 lanes opened 31 connections).
    await new Promise<void>((resolve) => setImmediate(resolve));
    const error = res.status >= 200 && res.status < 300 ? null : 'non_2xx';
    return {
      status: res.status,
      headers: res.headers,
      excerpt: res.excerpt,
      error,
      errorMessage: error ? `receiver answered ${res.status}` : null,
      durationMs,
    };
  } catch (err) {
    const { error, message } = classify(err);
    return { status: null, headers: {}, excerpt: null, error, errorMessage: message, durationMs: elapsed() };
  }
}

/** A URL as a POST to it needs it: parsed once per URL, not once per POST. */
interface PostUrl {
  origin: string;
  path: string;
  /** The host when it is an IP literal (brackets dropped), which the lookup hook never sees. */
  ipLiteral: string | null;
}

const parsedUrls = new Map<string, PostUrl>();
/** Endpoints' URLs are few; the bound only keeps a flood of distinct ones from growing the map for good. */
const PARSED_URLS_MAX = 10_000;

function targetOf(url: string): PostUrl {
  let parsed = parsedUrls.get(url);
  if (parsed) return parsed;
  const u = new URL(url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  parsed = { origin: u.origin, path: `${u.pathname}${u.search}`, ipLiteral: ipaddr.isValid(host) ? host : null };
  if (parsedUrls.size >= PARSED_URLS_MAX) parsedUrls.clear();
  parsedUrls.set(url, parsed);
  return parsed;
}

interface PostResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  excerpt: string | null;
}

/**
 * The POST through the pool's dispatch interface, the response's first bytes kept as they come:
 * undici's `request` wraps each one in an async resource, an abort signal's listener and a body
 * stream read by an async iterator, which together cost about a tenth of a sending worker's time.
 *
 * As `request` did: the deadline aborts the POST once it is on a connection (a connect has its own
 * timeout); a body cut off (by the deadline too) leaves what arrived; the connection is dropped
 * once 4 KiB of body are in.
 */
function dispatchPost(
  agent: Agent,
  target: PostUrl,
  headers: Record<string, string>,
  body: Buffer,
  timeoutMs: number,
): Promise<PostResponse> {
  return new Promise((resolve, reject) => {
    let controller: Dispatcher.DispatchController | null = null;
    let timedOut: Error | null = null;
    let response: PostResponse | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      timedOut = new DOMException('no response within the timeout', 'TimeoutError');
      controller?.abort(timedOut);
    }, timeoutMs);
    const settle = (err?: Error) => {
      clearTimeout(timer);
      if (response) {
        response.excerpt =
          size === 0 ? null : storableExcerpt(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES), { truncated: size >= EXCERPT_BYTES });
        resolve(response);
      } else reject(err ?? new Error('the response ended before its headers'));
      response = null;
    };
    agent.dispatch(
      { origin: target.origin, path: target.path, method: 'POST', headers, body },
      {
        onRequestStart(c) {
          controller = c;
          if (timedOut) c.abort(timedOut);
        },
        onResponseStart(_c, statusCode, resHeaders) {
          // 1xx: informational, the answer is still to come.
          if (statusCode >= 200) response = { status: statusCode, headers: resHeaders, excerpt: null };
        },
        onResponseData(c, chunk) {
          if (!response) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size < EXCERPT_BYTES) return;
          settle();
          c.abort(new Error('response excerpt complete'));
        },
        onResponseEnd: () => settle(),
        onResponseError: (_c, err) => settle(err),
      },
    );
  });
}
