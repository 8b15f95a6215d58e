/** What every route module of the local provider shares: its context and Graph-shaped answers. */
import type Router from '@koa/router';
import type { Context } from 'koa';
import getRawBody from 'raw-body';
import type { Notifier } from './notify.js';
import type { LocalProviderState } from './state.js';

export const GRAPH_VERSION = 'v24.0';

export interface LocalProviderContext {
  state: LocalProviderState;
  notifier: Notifier;
  /** The app's access token: Graph calls must carry it (or a photoapp account's own token). */
  accessToken: string;
}

/**
 * A route module registers Graph routes (mounted under /v24.0) and test-control routes
 * (mounted under /_local) on the two routers it is given.
 */
export type LocalRouteModule = (routers: { graph: Router; local: Router }, ctx: LocalProviderContext) => void;

/** Answers in the Graph error shape the platform's client maps to ProviderError. */
export function graphError(ctx: Context, status: number, code: number, message: string, subcode?: number, type = 'OAuthException'): void {
  ctx.status = status;
  ctx.body = { error: { message, type, code, ...(subcode === undefined ? {} : { error_subcode: subcode }), fbtrace_id: 'local' } };
}

/** The JSON body of a request, `{}` when empty; a body that is not JSON is a Graph 400. */
export async function jsonBody(ctx: Context): Promise<Record<string, unknown> | undefined> {
  const raw = await getRawBody(ctx.req, { limit: '1mb' });
  if (raw.length === 0) return {};
  try {
    const parsed = JSON.parse(raw.toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // answered below
  }
  graphError(ctx, 400, 100, 'Invalid parameter: the body is not a JSON object', undefined, 'GraphMethodException');
  return undefined;
}

/** The bearer token of a Graph call (or the access_token query parameter, as Graph accepts). */
export function bearerOf(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  if (header.startsWith('Bearer ')) return header.slice(7);
  const q = ctx.query.access_token;
  return typeof q === 'string' ? q : undefined;
}
