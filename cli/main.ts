/**
 * Operator CLI. JSON on stdout, errors on stderr with a non-zero exit. Works against
 * DATABASE_URL, or the embedded Postgres of a running `npm start` with the same DATA_DIR
 * (started for the duration of the command when none is running).
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { issueApiKey } from '../db/api-keys.js';
import {
  createAccount,
  createChannelAccount,
  createCustomer,
  deleteAccount,
  deleteChannelAccount,
  getAccount,
  getCustomerOfAccount,
  lockChannelAccount,
} from '../db/directory.js';
import { deleteEventsWhere } from '../db/events.js';
import { inTransaction } from '../db/pool.js';
import { migrate } from '../db/migrate.js';
import { createPool, type Db } from '../db/pool.js';
import { runningEmbeddedPostgresUrl, startEmbeddedPostgres } from '../dev/embedded-postgres.js';
import { loadConfig } from '../runtime/config.js';
import { SCOPES } from '../security/api-key.js';

class UsageError extends Error {}

const USAGE = `usage:
  account create --name N --owner-email E [--plan free|trial|paid] [--created-at ISO]
  key create --account ID --env live|sandbox --scopes s1,s2,...   (scopes: ${SCOPES.join(', ')})
  customer create --account ID --name N
  channel-account create --account ID [--customer ID] --channel chatapp|photoapp --display D
                         [--phone-number-id P] [--waba-id W] [--provider-account-id A] [--environment live|sandbox]
  channel-account delete --id ID   (removes it with its contacts, messages and events)
  account delete --id ID           (removes the Account and everything it owns)`;

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
  if (!(await getAccount(db, id))) throw new UsageError(`account ${id} does not exist`);
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

async function createAccountCommand(db: Db, values: Values): Promise<unknown> {
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

async function createKeyCommand(db: Db, values: Values): Promise<unknown> {
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

async function createCustomerCommand(db: Db, values: Values): Promise<unknown> {
  const v = parse(z.object({ account: uuid, name: z.string().min(1) }), { account: values.account, name: values.name });
  await requireAccount(db, v.account);
  const customer = await createCustomer(db, { accountId: v.account, name: v.name });
  return { ...customer, created_at: customer.created_at.toISOString() };
}

async function createChannelAccountCommand(db: Db, values: Values): Promise<unknown> {
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
      throw new UsageError(`customer ${v.customer} is not a customer of account ${v.account}`);
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

async function deleteChannelAccountCommand(db: Db, values: Values): Promise<unknown> {
  const v = parse(z.object({ id: uuid }), { id: values.id });
  return inTransaction(db, async (tx) => {
    const locked = await lockChannelAccount(tx, v.id);
    if (!locked) throw new UsageError(`channel account ${v.id} does not exist`);
    // Events first, so their undelivered deliveries end as event_deleted instead of vanishing.
    const events = await deleteEventsWhere(tx, { accountId: locked.account_id, channelAccountId: v.id });
    await deleteChannelAccount(tx, v.id);
    return { deleted: v.id, events_removed: events };
  });
}

async function deleteAccountCommand(db: Db, values: Values): Promise<unknown> {
  const v = parse(z.object({ id: uuid }), { id: values.id });
  if (!(await deleteAccount(db, v.id))) throw new UsageError(`account ${v.id} does not exist`);
  return { deleted: v.id };
}

/** The operator commands by `noun verb`. */
const COMMANDS: Record<string, (db: Db, values: Values) => Promise<unknown>> = {
  'account create': createAccountCommand,
  'key create': createKeyCommand,
  'customer create': createCustomerCommand,
  'channel-account create': createChannelAccountCommand,
  'channel-account delete': deleteChannelAccountCommand,
  'account delete': deleteAccountCommand,
};

async function run(db: Db, command: string, args: string[]): Promise<unknown> {
  const { values } = parseArgs({ args, strict: true, options: OPTIONS });
  const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!handler) throw new UsageError(`unknown command "${command}"\n${USAGE}`);
  return handler(db, values);
}

async function main(): Promise<number> {
  const [noun, verb, ...rest] = process.argv.slice(2);
  if (!noun || !verb) {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const config = loadConfig();
  let stopPostgres = async () => {};
  let url = config.databaseUrl ?? (await runningEmbeddedPostgresUrl(config.dataDir));
  if (!url) {
    const pg = await startEmbeddedPostgres(config.dataDir);
    url = pg.url;
    stopPostgres = pg.stop;
  }
  const db = createPool(url, 2);
  try {
    await migrate(url);
    const result = await run(db, `${noun} ${verb}`, rest);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (err) {
    const message =
      err instanceof UsageError || (err as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? (err as Error).message
        : `error: ${(err as Error).message}`;
    process.stderr.write(`${message}\n`);
    return err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS') ? 2 : 1;
  } finally {
    await db.end();
    await stopPostgres();
  }
}

// Exit explicitly: embedded-postgres installs exit hooks that would otherwise end the process with 0.
process.exit(await main());
