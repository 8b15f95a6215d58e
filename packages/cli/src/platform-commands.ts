/**
 * Commands for the platform's own surfaces: sending messages, contacts and their funnel stage
 * and consents, channel accounts, templates, setup links and broadcasts. main.ts hands over
 * its helpers, so every command prints, fails and exits the same way as the others.
 */
import type { Command } from 'commander';
import type { Message, WebhookPlatform } from '@webhook-platform/sdk';
import { record, table, type Column } from './output.js';

export interface CommandKit {
  client(cmd: Command): WebhookPlatform;
  show(cmd: Command, value: unknown, human: () => string): void;
  usage(message: string): Error;
  positiveInt(raw: string): number;
  list(raw: string): string[];
  nextPage(next: string | null): string;
}

const messageColumns: Column<Message>[] = [
  ['id', (m) => m.id],
  ['direction', (m) => m.direction],
  ['type', (m) => m.type],
  ['status', (m) => m.status],
  ['external_id', (m) => m.external_id],
  ['created_at', (m) => m.created_at],
];

export function registerPlatformCommands(program: Command, kit: CommandKit): void {
  registerMessageCommands(program, kit);
  registerContactCommands(program, kit);
  registerStageCommands(program, kit);
  registerChannelAccountCommands(program, kit);
  registerTemplateCommands(program, kit);
  registerSetupLinkCommands(program, kit);
  registerBroadcastCommands(program, kit);
}

/** `--limit` and `--after`, as every list takes them. */
function paging(c: Command, kit: CommandKit): Command {
  return c.option('--limit <n>', 'page size (at most 100)', kit.positiveInt).option('--after <cursor>', 'paging.next of the previous page');
}

function registerMessageCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const messages = program.command('messages').description('send messages through a channel account; read them');
  messages
    .command('send')
    .description('send a text or template message; its statuses arrive as chatapp.message.* events')
    .requiredOption('--channel-account <id>', 'channel account to send from')
    .requiredOption('--to <recipient>', 'phone number (chatapp) or scoped user id (photoapp)')
    .option('--text <body>', 'a text message')
    .option('--template <name>', 'a template message (chatapp), with --language')
    .option('--language <code>', 'template language, e.g. en_US', 'en_US')
    .option('--idempotency-key <key>', 'a retry with the same key answers the first send instead of sending again')
    .action(
      async (
        opts: { channelAccount: string; to: string; text?: string; template?: string; language: string; idempotencyKey?: string },
        cmd: Command,
      ) => {
        if ((opts.text === undefined) === (opts.template === undefined)) throw kit.usage('give exactly one of --text or --template');
        const content =
          opts.text !== undefined
            ? { type: 'text' as const, text: { body: opts.text } }
            : { type: 'template' as const, template: { name: opts.template!, language: opts.language } };
        const sent = await client(cmd).messages.send(
          { channel_account_id: opts.channelAccount, to: opts.to, ...content },
          { idempotencyKey: opts.idempotencyKey },
        );
        show(cmd, sent, () => `${record(sent)}\n\nIts statuses (sent, delivered, read) arrive at endpoints subscribed to statuses.`);
      },
    );
  paging(messages.command('list'), kit)
    .option('--contact <id>', 'only this contact')
    .option('--conversation <id>', 'only this conversation')
    .option('--channel-account <id>', 'only this channel account')
    .action(
      async (opts: { contact?: string; conversation?: string; channelAccount?: string; limit?: number; after?: string }, cmd: Command) => {
        const page = await client(cmd).messages.list({
          contact_id: opts.contact,
          conversation_id: opts.conversation,
          channel_account_id: opts.channelAccount,
          limit: opts.limit,
          after: opts.after,
        });
        show(cmd, page, () => table(page.data, messageColumns) + kit.nextPage(page.paging.next));
      },
    );
}

function registerContactCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const contacts = program.command('contacts').description('contacts, their funnel stage and consents');
  paging(contacts.command('list'), kit)
    .option('--stage <key>', 'only contacts on this stage')
    .option('--wa-id <id>', 'only this wa_id')
    .action(async (opts: { stage?: string; waId?: string; limit?: number; after?: string }, cmd: Command) => {
      const page = await client(cmd).contacts.list({ stage: opts.stage, wa_id: opts.waId, limit: opts.limit, after: opts.after });
      show(
        cmd,
        page,
        () =>
          table(page.data, [
            ['id', (c) => c.id],
            ['channel', (c) => c.channel],
            ['wa_id', (c) => c.wa_id],
            ['profile_name', (c) => c.profile_name],
            ['stage', (c) => c.stage?.key ?? null],
          ]) + kit.nextPage(page.paging.next),
      );
    });
  contacts.command('get <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
    const contact = await client(cmd).contacts.get(id);
    show(cmd, contact, () => record(contact));
  });
  contacts
    .command('stage <id> <stage>')
    .description('move the contact to a stage (its key; "none" leaves the funnel): emits crm.contact.stage_changed')
    .action(async (id: string, stage: string, _opts: unknown, cmd: Command) => {
      const contact = await client(cmd).contacts.update(id, { stage: stage === 'none' ? null : stage });
      show(cmd, contact, () => record(contact));
    });
  contacts
    .command('consent <id>')
    .description('record a consent: a change of state emits crm.contact.consent_changed')
    .requiredOption('--channel <channel>', "the contact's channel: chatapp or photoapp")
    .requiredOption('--state <state>', 'granted or revoked')
    .option('--purpose <purpose>', 'utility or marketing (default marketing)')
    .option('--evidence <text>', 'up to 500 characters')
    .action(async (id: string, opts: { channel: string; state: string; purpose?: string; evidence?: string }, cmd: Command) => {
      const consent = await client(cmd).contacts.consents.create(id, {
        channel: opts.channel as 'chatapp' | 'photoapp',
        state: opts.state as 'granted' | 'revoked',
        purpose: opts.purpose as 'utility' | 'marketing' | undefined,
        evidence: opts.evidence,
      });
      show(cmd, consent, () => record(consent));
    });
}

function registerStageCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const stages = program.command('stages').description('funnel stages');
  stages.command('list').action(async (_opts: unknown, cmd: Command) => {
    const page = await client(cmd).stages.list({ limit: 100 });
    show(cmd, page, () =>
      table(page.data, [
        ['position', (s) => s.position],
        ['key', (s) => s.key],
        ['label', (s) => s.label],
        ['id', (s) => s.id],
      ]),
    );
  });
  stages
    .command('create')
    .requiredOption('--key <key>', 'stable key, e.g. qualified')
    .requiredOption('--label <label>', 'what people read')
    .action(async (opts: { key: string; label: string }, cmd: Command) => {
      const stage = await client(cmd).stages.create(opts);
      show(cmd, stage, () => record(stage));
    });
}

function registerChannelAccountCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const accounts = program.command('channel-accounts').description('the connected numbers and photoapp accounts');
  paging(accounts.command('list'), kit).action(async (opts: { limit?: number; after?: string }, cmd: Command) => {
    const page = await client(cmd).channelAccounts.list(opts);
    show(
      cmd,
      page,
      () =>
        table(page.data, [
          ['id', (a) => a.id],
          ['channel', (a) => a.channel],
          ['display', (a) => a.display],
          ['phone_number_id', (a) => a.phone_number_id],
          ['token_status', (a) => a.token_status],
        ]) + kit.nextPage(page.paging.next),
    );
  });
  accounts.command('get <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
    const account = await client(cmd).channelAccounts.get(id);
    show(cmd, account, () => record(account));
  });
}

function registerTemplateCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const templates = program.command('templates').description('message templates of a channel account');
  templates
    .command('sync')
    .requiredOption('--channel-account <id>', 'read its templates from the provider')
    .action(async (opts: { channelAccount: string }, cmd: Command) => {
      const result = await client(cmd).templates.sync({ channel_account_id: opts.channelAccount });
      show(cmd, result, () => record(result));
    });
  paging(templates.command('list'), kit)
    .option('--channel-account <id>', 'only this channel account')
    .action(async (opts: { channelAccount?: string; limit?: number; after?: string }, cmd: Command) => {
      const page = await client(cmd).templates.list({ channel_account_id: opts.channelAccount, limit: opts.limit, after: opts.after });
      show(
        cmd,
        page,
        () =>
          table(page.data, [
            ['name', (t) => t.name],
            ['language', (t) => t.language],
            ['category', (t) => t.category],
            ['status', (t) => t.status],
          ]) + kit.nextPage(page.paging.next),
      );
    });
}

function registerSetupLinkCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const links = program
    .command('setup-links')
    .description(
      "links a Customer follows to connect a number (the provider's embedded signup) or a photoapp account (the provider's login)",
    );
  links
    .command('create')
    .requiredOption('--customer <id>', 'the Customer who connects')
    .option('--channel <channel>', 'chatapp (the default) or photoapp: connect or reconnect a photoapp account')
    .option('--mode <mode>', 'chatapp: dedicated or coexistence')
    .action(async (opts: { customer: string; channel?: string; mode?: string }, cmd: Command) => {
      const link = await client(cmd).setupLinks.create(opts.customer, {
        channel: opts.channel as 'chatapp' | 'photoapp' | undefined,
        connection_mode: opts.mode as 'dedicated' | 'coexistence' | undefined,
      });
      show(cmd, link, () => `${record(link)}\n\nThe url is shown only now.`);
    });
  paging(links.command('list'), kit)
    .requiredOption('--customer <id>', 'the Customer')
    .action(async (opts: { customer: string; limit?: number; after?: string }, cmd: Command) => {
      const page = await client(cmd).setupLinks.list(opts.customer, { limit: opts.limit, after: opts.after });
      show(cmd, page, () =>
        table(page.data, [
          ['id', (l) => l.id],
          ['channel', (l) => l.channel],
          ['status', (l) => l.status],
          ['expires_at', (l) => l.expires_at],
        ]),
      );
    });
}

function registerBroadcastCommands(program: Command, kit: CommandKit): void {
  const { client, show } = kit;
  const broadcasts = program.command('broadcasts').description('a template sent to many recipients');
  broadcasts
    .command('create')
    .requiredOption('--channel-account <id>', 'channel account to send from')
    .requiredOption('--template <name>', 'an approved template (see `templates list`)')
    .option('--language <code>', 'template language', 'en_US')
    .option('--reply-stage <key>', 'a contact who replies moves to this stage (changed_by auto)')
    .action(async (opts: { channelAccount: string; template: string; language: string; replyStage?: string }, cmd: Command) => {
      const broadcast = await client(cmd).broadcasts.create({
        channel_account_id: opts.channelAccount,
        template: { name: opts.template, language: opts.language },
        reply_stage: opts.replyStage,
      });
      show(cmd, broadcast, () => record(broadcast));
    });
  broadcasts
    .command('add-recipients <id>')
    .description('at most 1000 per call; invalid ones come back by index, repeats count as duplicates')
    .requiredOption('--to <numbers>', 'comma-separated recipients', kit.list)
    .action(async (id: string, opts: { to: string[] }, cmd: Command) => {
      const result = await client(cmd).broadcasts.addRecipients(id, { recipients: opts.to.map((to) => ({ to_recipient: to })) });
      show(cmd, result, () => record(result));
    });
  broadcasts.command('send <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
    const broadcast = await client(cmd).broadcasts.send(id);
    show(cmd, broadcast, () => record(broadcast));
  });
  broadcasts.command('get <id>').action(async (id: string, _opts: unknown, cmd: Command) => {
    const broadcast = await client(cmd).broadcasts.get(id);
    show(cmd, broadcast, () => record(broadcast));
  });
}
