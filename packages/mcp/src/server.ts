/**
 * The MCP server of the webhook platform: tools over the REST API (endpoints, test sends, the
 * delivery audit list, the stream), the event catalog as resources, and `webhooks://events/live`,
 * a resource whose subscribers are told when new stream items arrive.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ErrorCode,
  McpError,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { WebhookPlatform, WebhookPlatformError, type EventType } from '@webhook-platform/sdk';
import { z } from 'zod';
import { LiveStream, streamReader, type StreamReader } from './live-stream.js';

export { WebhookPlatform, WebhookPlatformError } from '@webhook-platform/sdk';
export { headCursor, streamReader, type StreamReader } from './live-stream.js';

export const VERSION = '0.12.0';
export const CATALOG_URI = 'webhooks://event-types';
export const LIVE_URI = 'webhooks://events/live';

const DELIVERY_STATUSES = ['pending', 'success', 'failed', 'exhausted', 'limited'] as const;
const limit = z.number().int().min(1).max(100).optional().describe('Page size, default 20, at most 100.');
const after = z.string().optional().describe('paging.next of the previous page.');

const json = (value: unknown) => JSON.stringify(value, null, 2);

/** The service root or its /api/v1 (both accepted, as WEBHOOKS_BASE_URL always did) as the SDK's base URL, which ends in /api/v1. */
export function apiV1Url(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '').replace(/\/api\/v1$/, '')}/api/v1`;
}

/** The SDK's error, or a request that ran out of time as its network_error (status 0). */
function platformError(err: unknown): WebhookPlatformError | undefined {
  if (err instanceof WebhookPlatformError) return err;
  if (err instanceof Error && err.name === 'TimeoutError') return WebhookPlatformError.network(`no answer in time: ${err.message}`, err);
  return undefined;
}

/** A tool's answer: the API's JSON, or the API's error as a tool error the model can read. */
async function answer(work: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    return { content: [{ type: 'text', text: json(await work()) }] };
  } catch (thrown) {
    const err = platformError(thrown);
    if (!err) throw thrown;
    return { isError: true, content: [{ type: 'text', text: `${err.code} (HTTP ${err.status}): ${err.message}` }] };
  }
}

export interface ServerOptions {
  /** The SDK's client, its baseUrl ending in /api/v1 (apiV1Url). */
  api: WebhookPlatform;
  /** How long one API call may take. Default 30 s. */
  timeoutMs?: number;
  /** How often a subscribed live stream asks for new items. */
  pollIntervalMs?: number;
  /** Where problems of the background poll go; never stdout, which is the protocol channel. */
  onError?: (err: unknown) => void;
}

export function createWebhooksMcpServer(opts: ServerOptions): { server: McpServer; close(): void } {
  const { api } = opts;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const call: Calls = { api, signal: () => AbortSignal.timeout(timeoutMs), read: streamReader(api, timeoutMs) };
  const server = new McpServer({ name: 'webhook-platform', version: VERSION });
  registerTools(server, call);
  registerReadOneTools(server, call);
  registerCatalog(server, call);
  const live = registerLiveStream(server, call, opts);
  return { server, close: () => live.stop() };
}

/** What the tools and resources call the API with: the client, a fresh time limit per call, the stream reader. */
interface Calls {
  api: WebhookPlatform;
  signal: () => AbortSignal;
  read: StreamReader;
}

function registerTools(server: McpServer, { api, signal, read }: Calls): void {
  server.registerTool(
    'list_endpoints',
    {
      title: 'List webhook endpoints',
      description: 'Webhook endpoints of the Account, oldest first, with their health (no secrets).',
      inputSchema: { limit, after },
    },
    (args) => answer(() => api.call('listWebhooks', { query: { limit: args.limit, after: args.after }, signal: signal() })),
  );

  server.registerTool(
    'send_test',
    {
      title: 'Send a test to an endpoint',
      description:
        'POSTs a signed webhook.test to the endpoint. A 2xx answer verifies it (health healthy, active); anything else is test_delivery_failed and changes no health.',
      inputSchema: { endpoint_id: z.uuid().describe('id of the webhook endpoint') },
    },
    (args) => answer(() => api.call('testWebhook', { params: { id: args.endpoint_id }, signal: signal() })),
  );

  server.registerTool(
    'list_deliveries',
    {
      title: 'List deliveries',
      description: 'The delivery audit list, newest first: status, attempts, last response code, next attempt, terminal reason.',
      inputSchema: {
        endpoint_id: z.uuid().optional().describe('only this endpoint'),
        status: z.enum(DELIVERY_STATUSES).optional(),
        event_type: z.string().optional().describe('fine event name, e.g. chatapp.message.received or webhook.test'),
        limit,
        after,
      },
    },
    (args) =>
      answer(() =>
        api.call('listDeliveries', {
          query: { endpoint_id: args.endpoint_id, status: args.status, event_type: args.event_type, limit: args.limit, after: args.after },
          signal: signal(),
        }),
      ),
  );

  server.registerTool(
    'read_stream',
    {
      title: 'Read the event stream',
      description:
        "Items of the durable event stream of the API key's environment after a cursor (exclusive), in cursor order. Continue from paging.cursor.",
      inputSchema: {
        after: z
          .string()
          .regex(/^\d{1,18}$/)
          .optional()
          .describe('cursor to read after, default 0'),
        limit,
      },
    },
    (args) => answer(() => read(args.after ?? '0', args.limit ?? 20)),
  );
}

/** One delivery (its attempts and the request as signed) and one event, by id. */
function registerReadOneTools(server: McpServer, { api, signal }: Calls): void {
  server.registerTool(
    'get_delivery',
    {
      title: 'Get a delivery',
      description:
        'One delivery with attempts_log (each attempt: started_at, duration, response code, error, response excerpt) and request: the headers and body exactly as signed (a stored Authorization shows as <set>; the headers are those of the latest attempt).',
      inputSchema: { delivery_id: z.uuid().describe('id of the delivery') },
    },
    (args) => answer(() => api.call('getDelivery', { params: { id: args.delivery_id }, signal: signal() })),
  );

  server.registerTool(
    'get_event',
    {
      title: 'Get an event',
      description: "One event of the API key's Account and environment, as a stream item (its payload in data).",
      inputSchema: { event_id: z.uuid().describe('id of the event (a delivery names it as event_id)') },
    },
    (args) => answer(() => api.call('getEvent', { params: { id: args.event_id }, signal: signal() })),
  );
}

function registerCatalog(server: McpServer, { api, signal }: Calls): void {
  const eventTypes = (): Promise<EventType[]> => api.eventTypes.list({ signal: signal() });

  server.registerResource(
    'event-catalog',
    CATALOG_URI,
    {
      title: 'Event catalog',
      description: 'Every event type: category, whether it is in the stream, description and the JSON Schema of its payload.',
      mimeType: 'application/json',
    },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: json(await eventTypes()) }] }),
  );

  server.registerResource(
    'event-type',
    new ResourceTemplate(`${CATALOG_URI}/{name}`, {
      list: async () => ({
        resources: (await eventTypes()).map((t) => ({
          uri: `${CATALOG_URI}/${t.name}`,
          name: t.name,
          description: t.description,
          mimeType: 'application/json',
        })),
      }),
    }),
    {
      title: 'Event type',
      description: 'One event type of the catalog with the JSON Schema of its payload.',
      mimeType: 'application/json',
    },
    async (uri, { name }) => {
      const found = (await eventTypes()).find((t) => t.name === name);
      if (!found) throw new McpError(ErrorCode.InvalidParams, `unknown event type ${String(name)}`);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: json(found) }] };
    },
  );
}

/** `webhooks://events/live`: subscribers are told when new stream items arrive. */
function registerLiveStream(server: McpServer, { read }: Calls, opts: ServerOptions): LiveStream {
  const live = new LiveStream(read, {
    pollIntervalMs: opts.pollIntervalMs ?? 2_000,
    onItems: () => void server.server.sendResourceUpdated({ uri: LIVE_URI }).catch(opts.onError ?? (() => {})),
    onError: opts.onError ?? (() => {}),
  });

  server.registerResource(
    'live-events',
    LIVE_URI,
    {
      title: 'Live event stream',
      description:
        'Subscribe to be notified when new events enter the stream. Reading gives the head cursor and the items that arrived since the subscription began (the last 100).',
      mimeType: 'application/json',
    },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: json(await live.snapshot()) }] }),
  );

  // McpServer has no subscription API of its own: the capability and its two requests go on the protocol server.
  server.server.registerCapabilities({ resources: { subscribe: true } });
  server.server.setRequestHandler(SubscribeRequestSchema, async ({ params }) => {
    if (params.uri !== LIVE_URI) throw new McpError(ErrorCode.InvalidParams, `only ${LIVE_URI} can be subscribed to`);
    await live.start();
    return {};
  });
  server.server.setRequestHandler(UnsubscribeRequestSchema, async ({ params }) => {
    if (params.uri === LIVE_URI) live.stop();
    return {};
  });

  return live;
}

/** The server configured from the environment: WEBHOOKS_BASE_URL, WEBHOOKS_API_KEY, WEBHOOKS_MCP_POLL_MS. */
export function serverFromEnv(env: NodeJS.ProcessEnv = process.env, onError?: (err: unknown) => void) {
  const apiKey = env.WEBHOOKS_API_KEY;
  if (!apiKey)
    throw new Error('WEBHOOKS_API_KEY is required (an API key of the platform; scopes webhooks:read, webhooks:write, events:read)');
  const pollIntervalMs = env.WEBHOOKS_MCP_POLL_MS ? Number(env.WEBHOOKS_MCP_POLL_MS) : undefined;
  if (pollIntervalMs !== undefined && !(pollIntervalMs > 0))
    throw new Error('WEBHOOKS_MCP_POLL_MS must be a positive number of milliseconds');
  const api = new WebhookPlatform({ baseUrl: apiV1Url(env.WEBHOOKS_BASE_URL || 'http://localhost:3000'), apiKey });
  return createWebhooksMcpServer({ api, pollIntervalMs, onError });
}
