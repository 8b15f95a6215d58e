/**
 * `webhooks`: the webhook platform from a terminal, on top of @webhook-platform/sdk.
 * Exit codes: 0 ok, 1 API error (the service answered with an error, or outside the
 * contract), 2 usage error, 3 network error (the service could not be reached).
 */
import path from 'node:path';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import {
  SDK_VERSION,
  WebhookPlatform,
  WebhookPlatformError,
  type Delivery,
  type DeliveryDetail,
  type Endpoint,
  type RecoverDeliveries,
  type StreamItem,
} from '@webhook-platform/sdk';
import { configDir, configPath, resolveSettings, writeConfig } from './config.js';
import { ensureCertificate, listenUrl, startListener } from './listen.js';
import { err, out, record, table, type Column } from './output.js';
import { registerPlatformCommands } from './platform-commands.js';

export const EXIT = { ok: 0, api: 1, usage: 2, network: 3 } as const;

/** A usage problem found after parsing (no key configured, a missing option value). */
class UsageError extends Error {}

interface Globals {
  json?: boolean;
  apiKey?: string;
  baseUrl?: string;
}

const program = new Command('webhooks')
  .description('The webhook platform from the command line (preview 0.x)')
  .version(SDK_VERSION)
  .option('--json', 'print JSON for scripts instead of tables')
  .option('--api-key <key>', 'API key (default: WEBHOOKS_API_KEY, then the stored login)')
  .option(
    '--base-url <url>',
    'API base URL ending in /api/v1 (default: WEBHOOKS_BASE_URL, then the stored login, then http://localhost:3000/api/v1)',
  )
  .showHelpAfterError()
  .exitOverride()
  .addHelpText(
    'after',
    `\nConfig file: ${configPath()} (WEBHOOKS_CONFIG to move it); WEBHOOKS_API_KEY and WEBHOOKS_BASE_URL override it.\n` +
      'Exit codes: 0 ok, 1 API error, 2 usage error, 3 network error.',
  );

const globals = (cmd: Command) => cmd.optsWithGlobals<Globals>();

function client(cmd: Command): WebhookPlatform {
  const { apiKey, baseUrl } = resolveSettings(globals(cmd));
  if (!apiKey) throw new UsageError('no API key: run `npx webhooks login --key <key>` or set WEBHOOKS_API_KEY');
  return new WebhookPlatform({ apiKey, baseUrl });
}

/** Prints `value` as JSON with --json, else the human form. */
function show(cmd: Command, value: unknown, human: () => string): void {
  out(globals(cmd).json ? JSON.stringify(value, null, 2) : human());
}

const positiveInt = (raw: string) => {
  if (!/^\d+$/.test(raw)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(raw);
};
/** POSTs per second (an integer >= 1), or `none` (or "") for no throttle. */
const rateLimit = (raw: string): number | 'none' => {
  if (raw === '' || raw === 'none') return 'none'; // not null: commander turns a null into ''
  if (!/^[1-9]\d*$/.test(raw)) throw new InvalidArgumentError('expected an integer >= 1 (POSTs per second), or none');
  return Number(raw);
};
const rateLimitBody = (v: number | 'none' | undefined) => (v === 'none' ? null : v);
const list = (raw: string) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const collect = (value: string, previous: string[] = []) => [...previous, value];
const bool = (raw: string) => {
  if (raw !== 'true' && raw !== 'false') throw new InvalidArgumentError('expected true or false');
  return raw === 'true';
};

const endpointColumns: Column<Endpoint>[] = [
  ['id', (e) => e.id],
  ['url', (e) => e.url],
  ['events', (e) => e.events],
  ['active', (e) => e.active],
  ['health', (e) => e.health_status],
  ['streak', (e) => e.failure_streak],
];
const deliveryColumns: Column<Delivery>[] = [
  ['id', (d) => d.id],
  ['event_type', (d) => d.event_type],
  ['status', (d) => d.status],
  ['attempts', (d) => d.attempts],
  ['code', (d) => d.response_code],
  ['created_at', (d) => d.created_at],
];
const eventLine = (e: StreamItem) => `${e.cursor.padStart(6)}  ${e.created_at}  ${e.type}  ${e.id}`;
const nextPage = (next: string | null) => (next ? `\nmore: --after ${next}` : '');

program
  .command('login')
  .description('store an API key (and base URL) in the config file, mode 0600')
  .requiredOption('--key <key>', 'API key')
  .option('--no-verify', 'store without checking the key against the service')
  .action(async (opts: { key: string; verify: boolean }, cmd: Command) => {
    const baseUrl = resolveSettings({ baseUrl: globals(cmd).baseUrl }).baseUrl;
    if (opts.verify) await new WebhookPlatform({ apiKey: opts.key, baseUrl }).eventTypes.list();
    const file = writeConfig({ api_key: opts.key, base_url: baseUrl });
    show(cmd, { config: file, base_url: baseUrl }, () => `Logged in to ${baseUrl}; key stored in ${file}`);
  });

const endpoints = program.command('endpoints').description('webhook endpoints');
endpoints
  .command('list')
  .option('--limit <n>', 'page size (at most 100)', positiveInt)
  .option('--after <cursor>', 'paging.next of the previous page')
  .action(async (opts: { limit?: number; after?: string }, cmd: Command) => {
    const page = await client(cmd).webhooks.list({ limit: opts.limit, after: opts.after });
    show(cmd, page, () => table(page.data, endpointColumns) + nextPage(page.paging.next));
  });
endpoints
  .command('create')
  .requiredOption('--url <url>', 'https:// URL of the receiver')
  .requiredOption('--events <categories>', 'comma-separated: messages,statuses,crm,account,app_messages', list)
  .option('--secret <secret>', 'signing secret (16-256 characters); generated when omitted')
  .option('--customer-id <uuid>', 'only events of this Customer')
  .option('--inactive', 'create it inactive')
  .option('--rate-limit <n>', 'at most n POSTs per second to it (default: unlimited)', rateLimit)
  .option('--description <text>', 'what the endpoint is for (at most 512 characters)')
  .action(
    async (
      opts: {
        url: string;
        events: string[];
        secret?: string;
        customerId?: string;
        inactive?: boolean;
        rateLimit?: number | 'none';
        description?: string;
      },
      cmd: Command,
    ) => {
      const created = await client(cmd).webhooks.create({
        url: opts.url,
        events: opts.events,
        secret: opts.secret,
        customer_id: opts.customerId,
        active: opts.inactive ? false : undefined,
        rate_limit: rateLimitBody(opts.rateLimit),
        description: opts.description,
      });
      show(
        cmd,
        created,
        () => `${record(created)}\n\nThe secret is shown only now. Verify the endpoint with: npx webhooks endpoints test ${created.id}`,
      );
    },
  );
endpoints.command('get <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
  const endpoint = await client(cmd).webhooks.get(id);
  show(cmd, endpoint, () => record(endpoint));
});
endpoints
  .command('update <id>')
  .option('--url <url>')
  .option('--events <categories>', 'comma-separated categories', list)
  .option('--secret <secret>', 'new signing secret, used from the next attempt on')
  .option('--active <bool>', 'false deactivates; reactivating goes through `endpoints test`', bool)
  .option('--customer-id <uuid>', 'Customer filter ("" removes it)')
  .option('--authorization <value>', 'Authorization header sent with each delivery ("" removes it)')
  .option('--rate-limit <n>', 'at most n POSTs per second, applied from the next POST ("none" removes it)', rateLimit)
  .option('--description <text>', 'what the endpoint is for, at most 512 characters ("" removes it)')
  .action(
    async (
      id: string,
      opts: {
        url?: string;
        events?: string[];
        secret?: string;
        active?: boolean;
        customerId?: string;
        authorization?: string;
        rateLimit?: number | 'none';
        description?: string;
      },
      cmd: Command,
    ) => {
      const body = {
        url: opts.url,
        events: opts.events,
        secret: opts.secret,
        active: opts.active,
        customer_id: opts.customerId === undefined ? undefined : opts.customerId || null,
        headers: opts.authorization === undefined ? undefined : { Authorization: opts.authorization || null },
        rate_limit: rateLimitBody(opts.rateLimit),
        description: opts.description === undefined ? undefined : opts.description || null,
      };
      if (Object.values(body).every((v) => v === undefined)) throw new UsageError('nothing to update: give at least one option');
      const updated = await client(cmd).webhooks.update(id, body);
      show(cmd, updated, () => record(updated));
    },
  );
endpoints.command('delete <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
  await client(cmd).webhooks.delete(id);
  show(cmd, { deleted: id }, () => `Deleted ${id}`);
});
endpoints
  .command('test <id>')
  .description('send a signed webhook.test; a 2xx answer verifies (and reactivates) the endpoint')
  .action(async (id: string, _opts: unknown, cmd: Command) => {
    const result = await client(cmd).webhooks.test(id);
    show(cmd, result, () => record(result));
  });
endpoints
  .command('recover <id>')
  .description("put the endpoint's failed, exhausted and limited deliveries created in a time window back to pending")
  .requiredOption('--since <time>', 'ISO 8601 timestamp with a zone, e.g. 2026-11-22T10:00:00Z: deliveries created at or after it')
  .option('--until <time>', 'ISO 8601 timestamp: deliveries created at or before it (default now)')
  .option('--statuses <statuses>', 'comma-separated subset of failed,exhausted,limited (default all three)', list)
  .action(async (id: string, opts: { since: string; until?: string; statuses?: string[] }, cmd: Command) => {
    const result = await client(cmd).webhooks.recover(id, {
      since: opts.since,
      until: opts.until,
      // The service names a wrong value (422 invalid_recovery); the CLI does not guess the list.
      statuses: opts.statuses as RecoverDeliveries['statuses'],
    });
    show(cmd, result, () => `${record(result)}\n\nRecovered ${result.recovered}; the endpoint sends them at the pace its health allows.`);
  });

const deliveries = program.command('deliveries').description('the delivery audit list');
deliveries
  .command('list')
  .option('--endpoint <id>', 'only this endpoint')
  .option('--status <status>', 'pending, success, failed, exhausted or limited')
  .option('--event-type <type>', 'fine event name, e.g. webhook.test')
  .option('--limit <n>', 'page size (at most 100)', positiveInt)
  .option('--after <cursor>', 'paging.next of the previous page')
  .action(async (opts: { endpoint?: string; status?: string; eventType?: string; limit?: number; after?: string }, cmd: Command) => {
    const page = await client(cmd).deliveries.list({
      endpoint_id: opts.endpoint,
      status: opts.status,
      event_type: opts.eventType,
      limit: opts.limit,
      after: opts.after,
    });
    if (globals(cmd).json) return show(cmd, page, () => '');
    const errors = await lastErrors(cmd, page.data);
    const columns: Column<Delivery>[] = deliveryColumns.map(([name, get]) =>
      name === 'code' ? [name, (d) => d.response_code ?? errors.get(d.id) ?? null] : [name, get],
    );
    show(cmd, page, () => table(page.data, columns) + nextPage(page.paging.next));
  });

/** A delivery without a response code failed before any answer: its last attempt says why (timeout, connection_error...). */
async function lastErrors(cmd: Command, page: Delivery[]): Promise<Map<string, string>> {
  const unanswered = page.filter((d) => d.response_code === null && d.attempts > 0);
  const errors = new Map<string, string>();
  await Promise.all(
    unanswered.map(async (d) => {
      const log = (await client(cmd).deliveries.get(d.id)).attempts_log;
      const error = log[log.length - 1]?.error;
      if (error) errors.set(d.id, error);
    }),
  );
  return errors;
}
deliveries
  .command('get <id>')
  .description('one delivery: its attempts and the request as signed (headers and body)')
  .action(async (id: string, _opts: unknown, cmd: Command) => {
    const delivery = await client(cmd).deliveries.get(id);
    show(cmd, delivery, () => {
      const { attempts_log, request, ...rest } = delivery;
      const attempts = table(attempts_log, [
        ['#', (a) => a.number],
        ['started_at', (a) => a.started_at],
        ['ms', (a) => a.duration_ms],
        ['code', (a) => a.response_code],
        ['error', (a) => a.error],
      ]);
      return `${record(rest)}\n\n${attempts}\n\n${shownRequest(request)}`;
    });
  });

/** The request as signed, as an HTTP message: which attempt's headers, the headers, a blank line, the body. */
function shownRequest(request: DeliveryDetail['request']): string {
  if (!request) return 'Request: not available (its event or its endpoint was deleted)';
  const which = request.attempt === null ? 'as the next attempt sends it (no attempt yet)' : `as attempt ${request.attempt} sent it`;
  const headers = Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`);
  return [`Request, ${which}:`, ...headers, '', request.body].join('\n');
}
deliveries
  .command('resend <id>')
  .description('put a limited, exhausted or failed delivery back to pending')
  .action(async (id: string, _opts: unknown, cmd: Command) => {
    const delivery = await client(cmd).deliveries.resend(id);
    show(cmd, delivery, () => record(delivery));
  });

const events = program.command('events').description('the durable event stream');
events
  .command('get <id>')
  .description("one event of the key's Account and environment")
  .action(async (id: string, _opts: unknown, cmd: Command) => {
    const event = await client(cmd).events.get(id);
    show(cmd, event, () => record(event));
  });
events
  .command('tail')
  .description('print the stream after a cursor; with --json one JSON item per line')
  .option('--after <cursor>', 'exclusive cursor to start after (a saved cursor)', '0')
  .option('--follow', 'keep polling for new events until Ctrl-C')
  .option('--limit <n>', 'page size (at most 100)', positiveInt)
  .action(async (opts: { after: string; follow?: boolean; limit?: number }, cmd: Command) => {
    const json = globals(cmd).json;
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    const stream = client(cmd).events.stream({ after: opts.after, follow: opts.follow, limit: opts.limit, signal: stop.signal });
    for await (const item of stream) out(json ? JSON.stringify(item) : eventLine(item));
    // stderr, so that --json output stays one item per line.
    err(`cursor ${stream.cursor} (resume with --after ${stream.cursor})`);
  });

program
  .command('event-types')
  .description('the event catalog')
  .action(async (_opts: unknown, cmd: Command) => {
    const types = await client(cmd).eventTypes.list();
    show(cmd, types, () =>
      table(types, [
        ['name', (t) => t.name],
        ['category', (t) => t.category],
        ['in_stream', (t) => t.in_stream],
      ]),
    );
  });

program
  .command('listen')
  .description('a local HTTPS receiver that verifies signatures and prints each webhook')
  .option('--port <port>', 'port to listen on (0: any free port)', positiveInt, 4000)
  .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
  .option('--secret <secret>', 'signing secret of the endpoint; repeat while rotating', collect, [] as string[])
  .action(async (opts: { port: number; host: string; secret: string[] }, cmd: Command) => {
    const json = globals(cmd).json;
    const secrets = [...opts.secret, ...(process.env.WEBHOOKS_LISTEN_SECRETS ? list(process.env.WEBHOOKS_LISTEN_SECRETS) : [])];
    if (secrets.length === 0)
      throw new UsageError("give the endpoint's signing secret with --secret (create the endpoint with the same --secret)");
    const tls = await ensureCertificate(path.join(configDir(), 'listen'));
    const listener = await startListener({
      host: opts.host,
      port: opts.port,
      secrets,
      tls,
      onWebhook: (w) => {
        if (json)
          out(JSON.stringify({ event: w.event, idempotency_key: w.idempotencyKey, duplicate: w.duplicate, verified: true, body: w.body }));
        else
          out(
            `${new Date().toISOString()}  verified  ${w.event ?? '-'}  ${w.idempotencyKey}${w.duplicate ? '  (duplicate)' : ''}\n${JSON.stringify(w.body, null, 2)}`,
          );
      },
      onRefused: (status, why) => err(`${new Date().toISOString()}  refused ${status}: ${why}`),
    });
    const url = listenUrl(opts.host, listener.port);
    const env = { WEBHOOKS_DEV_MODE: '1', WEBHOOKS_DEV_CA_FILE: tls.caFile };
    if (json) out(JSON.stringify({ listening: url, ca_file: tls.caFile, env }));
    else {
      err(`Listening on ${url} (certificate of the CA ${tls.caFile})`);
      err('The service delivers here only in dev mode; start it with:');
      err(
        `  ${Object.entries(env)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')} npm start`,
      );
      // The secret it was given, so the hint can be pasted as it stands; the categories the quickstart
      // shows arriving (its published CRM event, and the statuses of its sent message).
      err(
        `Then: npx webhooks endpoints create --url ${url} --events crm,statuses --secret ${secrets[0]} && npx webhooks endpoints test <id>`,
      );
    }
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await listener.close();
  });

registerPlatformCommands(program, {
  client,
  show,
  usage: (message) => new UsageError(message),
  positiveInt,
  list,
  nextPage,
});

function report(e: unknown): number {
  if (e instanceof CommanderError) {
    // Help and --version end through here too, with exit code 0.
    return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (e instanceof UsageError) {
    err(`error: ${e.message}`);
    return EXIT.usage;
  }
  if (e instanceof WebhookPlatformError) {
    if (program.opts<Globals>().json) out(JSON.stringify({ error: { status: e.status, code: e.code, message: e.message } }));
    err(`error: ${e.code}${e.status ? ` (HTTP ${e.status})` : ''}: ${e.message}`);
    return e.code === 'network_error' ? EXIT.network : EXIT.api;
  }
  err(`error: ${(e as Error).message ?? e}`);
  return EXIT.api;
}

try {
  await program.parseAsync(process.argv);
} catch (e) {
  process.exitCode = report(e);
}
