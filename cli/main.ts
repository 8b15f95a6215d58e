/**
 * `webhooks-admin`, the operator CLI (`npm run admin`; `npm run cli` is the same with --json).
 * A record on stdout (JSON with --json), errors on stderr, exit codes as in ./output.ts. Works
 * against DATABASE_URL, or the embedded Postgres of a running `npm start` with the same
 * DATA_DIR (started for the duration of the command when none is running).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { issueApiKey } from '../src/db/api-keys.js';
import {
  createAccount,
  createChannelAccount,
  createCustomer,
  deleteAccount,
  deleteChannelAccount,
  getAccount,
  getCustomerOfAccount,
  lockChannelAccount,
} from '../src/db/directory.js';
import { deleteEventsWhere } from '../src/db/events.js';
import { inTransaction } from '../src/db/pool.js';
import { migrate } from '../src/db/migrate.js';
import { createPool, type Db } from '../src/db/pool.js';
import { runningEmbeddedPostgresUrl, startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { loadConfig } from '../src/runtime/config.js';
import { SCOPES } from '../src/security/api-key.js';
import { EXIT, NotFoundError, UnreachableError, UsageError, errorMessage, exitCodeFor, render } from './output.js';

const COMMANDS = new Set([
  'account create',
  'key create',
  'customer create',
  'channel-account create',
  'channel-account delete',
  'account delete',
  'database url',
]);

const USAGE = `usage: webhooks-admin [--json] <command> [options]
  account create --name N --owner-email E [--plan free|trial|paid] [--created-at ISO]
  key create --account ID --env live|sandbox --scopes s1,s2,...   (scopes: ${SCOPES.join(', ')})
  customer create --account ID --name N
  channel-account create --account ID [--customer ID] --channel chatapp|photoapp --display D
                         [--phone-number-id P] [--waba-id W] [--provider-account-id A] [--environment live|sandbox]
  channel-account delete --id ID   (removes it with its contacts, messages and events)
  account delete --id ID           (removes the Account and everything it owns)
  database url                     (prints the url of DATABASE_URL or of the running embedded Postgres, for a receiver)

--json prints JSON for scripts instead of a record. Exit codes: 0 ok, 1 error from the database,
2 usage error, 3 cannot reach the database.`;

function parse<S extends z.ZodType>(schema: S, values: unknown): z.infer<S> {
  const result = schema.safeParse(values);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new UsageError(`--${issue.path.join('.').replace(/_/g, '-')}: ${issue.message}`);
  }
  return result.data;
}

const uuid = z.uuid({ message: 'must be a UUID' });

async function requireAccount(db: Db, id: string) {
  if (!(await getAccount(db, id))) throw new NotFoundError(`account ${id} does not exist`);
}

const OPTIONS = {
  name: { type: 'string' },
  'owner-email': { type: 'string' },
  plan: { type: 'string' },
  'created-at': { type: 'string' },
  account: { type: 'string' },
  env: { type: 'string' },
  scopes: { type: 'string' },
  customer: { type: 'string' },
  channel: { type: 'string' },
  display: { type: 'string' },
  'phone-number-id': { type: 'string' },
  'waba-id': { type: 'string' },
  'provider-account-id': { type: 'string' },
  environment: { type: 'string' },
  id: { type: 'string' },
} as const;
type Values = Record<string, string | undefined>;

async function createAccountCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(
    z.object({
      name: z.string().min(1),
      owner_email: z.email(),
      plan: z.enum(['free', 'trial', 'paid']).default('free'),
      created_at: z.iso.datetime({ offset: true }).optional(),
    }),
    { name: values.name, owner_email: values['owner-email'], plan: values.plan, created_at: values['created-at'] },
  );
  const account = await createAccount(db, {
    name: v.name,
    ownerEmail: v.owner_email,
    plan: v.plan,
    createdAt: v.created_at ? new Date(v.created_at) : undefined,
  });
  return { ...account, created_at: account.created_at.toISOString() };
}

async function createKeyCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(z.object({ account: uuid, env: z.enum(['live', 'sandbox']), scopes: z.array(z.enum(SCOPES)).min(1) }), {
    account: values.account,
    env: values.env,
    scopes: values.scopes
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  });
  await requireAccount(db, v.account);
  const key = await issueApiKey(db, { accountId: v.account, environment: v.env, scopes: v.scopes });
  return {
    id: key.id,
    account_id: key.account_id,
    environment: key.environment,
    scopes: key.scopes,
    key: key.key,
    created_at: key.created_at.toISOString(),
  };
}

async function createCustomerCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(z.object({ account: uuid, name: z.string().min(1) }), { account: values.account, name: values.name });
  await requireAccount(db, v.account);
  const customer = await createCustomer(db, { accountId: v.account, name: v.name });
  return { ...customer, created_at: customer.created_at.toISOString() };
}

async function createChannelAccountCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(
    z.object({
      account: uuid,
      customer: uuid.optional(),
      channel: z.enum(['chatapp', 'photoapp']),
      display: z.string().min(1),
      phone_number_id: z.string().min(1).optional(),
      waba_id: z.string().min(1).optional(),
      provider_account_id: z.string().min(1).optional(),
      environment: z.enum(['live', 'sandbox']).default('live'),
    }),
    {
      account: values.account,
      customer: values.customer,
      channel: values.channel,
      display: values.display,
      phone_number_id: values['phone-number-id'],
      waba_id: values['waba-id'],
      provider_account_id: values['provider-account-id'],
      environment: values.environment,
    },
  );
  await requireAccount(db, v.account);
  if (v.customer) {
    if (!(await getCustomerOfAccount(db, v.account, v.customer)))
      throw new NotFoundError(`customer ${v.customer} is not a customer of account ${v.account}`);
  }
  const ca = await createChannelAccount(db, {
    accountId: v.account,
    customerId: v.customer ?? null,
    channel: v.channel,
    display: v.display,
    phoneNumberId: v.phone_number_id ?? null,
    wabaId: v.waba_id ?? null,
    providerAccountId: v.provider_account_id ?? null,
    environment: v.environment,
  });
  return { ...ca, created_at: ca.created_at.toISOString() };
}

async function deleteChannelAccountCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(z.object({ id: uuid }), { id: values.id });
  return inTransaction(db, async (tx) => {
    const locked = await lockChannelAccount(tx, v.id);
    if (!locked) throw new NotFoundError(`channel account ${v.id} does not exist`);
    // Events first, so their undelivered deliveries end as event_deleted instead of vanishing.
    const events = await deleteEventsWhere(tx, { accountId: locked.account_id, channelAccountId: v.id });
    await deleteChannelAccount(tx, v.id);
    return { deleted: v.id, events_removed: events };
  });
}

async function deleteAccountCommand(db: Db, values: Values): Promise<Record<string, unknown>> {
  const v = parse(z.object({ id: uuid }), { id: values.id });
  if (!(await deleteAccount(db, v.id))) throw new NotFoundError(`account ${v.id} does not exist`);
  return { deleted: v.id };
}

/** What each command of COMMANDS does. */
const HANDLERS: Record<string, (db: Db, values: Values) => Promise<Record<string, unknown>>> = {
  'account create': createAccountCommand,
  'key create': createKeyCommand,
  'customer create': createCustomerCommand,
  'channel-account create': createChannelAccountCommand,
  'channel-account delete': deleteChannelAccountCommand,
  'account delete': deleteAccountCommand,
};

async function run(db: Db, command: string, args: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({ args, strict: true, options: OPTIONS });
  const handler = Object.hasOwn(HANDLERS, command) ? HANDLERS[command] : undefined;
  if (!handler) throw new UsageError(`unknown command "${command}"\n${USAGE}`);
  return handler(db, values);
}

/** The database of this run: DATABASE_URL, a running `npm start`'s, or one started for the command. */
async function openDatabase(): Promise<{ url: string; stop: () => Promise<void> }> {
  const config = loadConfig();
  const url = config.databaseUrl ?? (await runningEmbeddedPostgresUrl(config.dataDir));
  if (url) return { url, stop: async () => {} };
  try {
    return await startEmbeddedPostgres(config.dataDir);
  } catch (err) {
    throw new UnreachableError(`could not start the embedded Postgres in ${config.dataDir}: ${(err as Error).message}`);
  }
}

/** Plain text, for `$(...)`: a url only while a server runs (one started for this command would stop with it). */
async function printDatabaseUrl(): Promise<number> {
  const config = loadConfig();
  const url = config.databaseUrl ?? (await runningEmbeddedPostgresUrl(config.dataDir));
  if (!url) {
    process.stderr.write('error: no Postgres: set DATABASE_URL, or run `npm start` (with the same DATA_DIR) first\n');
    return EXIT.error;
  }
  process.stdout.write(`${url}\n`);
  return EXIT.ok;
}

async function main(argv: string[]): Promise<number> {
  // --json and --help are global flags, accepted anywhere (`npm run cli` puts --json first).
  const json = argv.includes('--json');
  const [noun, verb, ...rest] = argv.filter((a) => a !== '--json');
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  if (!noun || !verb || !COMMANDS.has(`${noun} ${verb}`)) {
    process.stderr.write(noun && verb ? `unknown command "${noun} ${verb}"\n${USAGE}\n` : `${USAGE}\n`);
    return EXIT.usage;
  }
  if (`${noun} ${verb}` === 'database url') return printDatabaseUrl();
  let db: Db | undefined;
  let stop = async () => {};
  try {
    const database = await openDatabase();
    stop = database.stop;
    db = createPool(database.url, 2);
    await migrate(database.url);
    process.stdout.write(`${render(await run(db, `${noun} ${verb}`, rest), json)}\n`);
    return EXIT.ok;
  } catch (err) {
    process.stderr.write(`${errorMessage(err)}\n`);
    return exitCodeFor(err);
  } finally {
    await db?.end();
    await stop();
  }
}

// Exit explicitly: embedded-postgres installs exit hooks that would otherwise end the process with 0.
process.exit(await main(process.argv.slice(2)));
