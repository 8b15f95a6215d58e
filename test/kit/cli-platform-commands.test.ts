/**
 * The `webhooks` CLI's commands for the platform's own surfaces, run as a user runs them (the
 * bin, as a child process) against the real API on real Postgres and the local provider.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, eventually, type Tenant } from '../support/harness.js';
import { connectChatappNumber, startApiWithProvider, type ApiWithProvider } from '../support/local-provider.js';
import { runWebhooksCli, type CliRun } from '../support/webhooks-cli.js';

const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webhooks-cli-platform-'));

let bed: ApiWithProvider;
let tenant: Tenant;
let channelAccountId: string;

beforeAll(async () => {
  bed = await startApiWithProvider({ statusDelayMs: 20 });
  tenant = await createTenant();
  ({ channelAccountId } = await connectChatappNumber(bed, tenant, {
    templates: [{ name: 'welcome', language: 'en_US', status: 'APPROVED' }],
  }));
});
afterAll(() => bed.close());

function cli(...args: string[]): Promise<CliRun> {
  return runWebhooksCli(args, {
    ...process.env,
    WEBHOOKS_CONFIG: path.join(configDir, 'config.json'),
    WEBHOOKS_API_KEY: tenant.key,
    WEBHOOKS_BASE_URL: `${bed.api.url}/api/v1`,
  });
}

const phone = () => `1555${crypto.randomInt(1_000_000, 9_999_999)}`;

describe('webhooks CLI: messages, contacts, stages, consents, templates, broadcasts', () => {
  it('sends a message, and the contact moves through the funnel with a consent on record', async () => {
    const to = phone();
    const sent = await cli('--json', 'messages', 'send', '--channel-account', channelAccountId, '--to', to, '--text', 'Hello from the CLI');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.json).toMatchObject({ status: 'queued', direction: 'outbound' });
    const human = await cli('messages', 'list', '--contact', sent.json.contact_id);
    expect(human.stdout).toContain(sent.json.id);

    expect((await cli('stages', 'create', '--key', 'lead', '--label', 'Lead')).code).toBe(0);
    const staged = await cli('--json', 'contacts', 'stage', sent.json.contact_id, 'lead');
    expect(staged.json.stage).toMatchObject({ key: 'lead' });
    const listed = await cli('contacts', 'list', '--stage', 'lead');
    expect(listed.stdout).toContain(to);
    const consent = await cli('--json', 'contacts', 'consent', sent.json.contact_id, '--channel', 'chatapp', '--state', 'granted');
    expect(consent.json).toMatchObject({ state: 'granted', purpose: 'marketing', changed: true });
    await eventually(async () => {
      const events = await cli('--json', 'events', 'tail', '--after', '0');
      const types = events.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).type as string);
      return (
        types.includes('crm.contact.stage_changed') &&
        types.includes('crm.contact.consent_changed') &&
        types.includes('chatapp.message.read')
      );
    });
  });

  it('refuses what the API refuses (exit 1) and a send that names no content (exit 2)', async () => {
    const neither = await cli('messages', 'send', '--channel-account', channelAccountId, '--to', phone());
    expect(neither.code).toBe(2);
    expect(neither.stderr).toMatch(/exactly one of --text or --template/);
    const unknownStage = await cli('contacts', 'stage', crypto.randomUUID(), 'nowhere');
    expect(unknownStage.code).toBe(1);
    expect(unknownStage.stderr).toMatch(/not_found/);
  });

  it('syncs templates and sends a broadcast', async () => {
    expect((await cli('templates', 'sync', '--channel-account', channelAccountId)).code).toBe(0);
    expect((await cli('templates', 'list', '--channel-account', channelAccountId)).stdout).toMatch(/welcome\s+en_US/);
    const created = await cli('--json', 'broadcasts', 'create', '--channel-account', channelAccountId, '--template', 'welcome');
    expect(created.code, created.stderr).toBe(0);
    const [a, b] = [phone(), phone()];
    const added = await cli('--json', 'broadcasts', 'add-recipients', created.json.id, '--to', `${a},${b},${a},nope`);
    expect(added.json).toMatchObject({ added: 2, duplicates: 1 });
    expect(added.json.errors).toEqual([expect.objectContaining({ index: 3 })]);
    const sent = await cli('--json', 'broadcasts', 'send', created.json.id);
    expect(sent.json).toMatchObject({ status: 'sent', counts: { sent: 2 } });
  });
});
