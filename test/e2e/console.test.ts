/**
 * The tenant console in a real browser (Debian's Chromium through playwright-core) against the
 * production entry points: API, worker, Temporal dev server, Postgres and an HTTPS receiver.
 * A person's path: sign in, create an endpoint, verify it, watch a delivery arrive, watch one
 * fail, recover it, pause and reactivate; the key never leaves sessionStorage and the header.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CONSOLE_CSP } from '../../src/api/console.js';
import { startApi, type RunningApi } from '../../src/api/server.js';
import { CHROMIUM_PATH, ensureChromium, projectRoot } from '../../dev/tools.js';
import { loadConfig } from '../../src/runtime/config.js';
import { runWorker } from '../../src/worker/main.js';
import { demandRow, samples } from '../support/catalog-samples.js';
import { createTenant, type Tenant } from '../support/harness.js';
import { startReceiver, type Receiver } from '../support/https-receiver.js';

let api: RunningApi;
let receiver: Receiver;
let tenant: Tenant;
let browser: Browser;
let page: Page;
const stopWorker = new AbortController();
let worker: Promise<void>;
/** Every URL the page asked for, to prove the key is in none of them. */
const requested: string[] = [];
/** Console messages and uncaught errors of the page: a CSP refusal or a script error shows here. */
const consoleMessages: string[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  // As the Temporal tools: found, or installed once (Debian's package, as root), else a clear failure.
  const executablePath = await ensureChromium();
  if (!executablePath) throw new Error(`${CHROMIUM_PATH} is missing and could not be installed: install Debian's chromium`);
  const config = {
    ...loadConfig({}),
    port: 0,
    databaseUrl: inject('databaseUrl'),
    temporalAddress: inject('devServerAddress'),
    taskQueue: `e2e-console-${crypto.randomUUID()}`,
    encryptionKey: crypto.randomBytes(32).toString('base64'),
    // Test files share one database: a sweep would wake other files' endpoints on this task queue.
    dueSweepMs: 0,
    // Speed only, and the suite starts many services side by side (test/support/running-service.ts).
    warmUpRequests: 0,
    // Nor may a maintenance run (one Schedule per namespace) touch other files' photoapp tokens.
    maintenanceSchedule: false,
    allowPrivateCidrs: ['127.0.0.0/8', '::1/128'],
  };
  worker = runWorker(config, { signal: stopWorker.signal, workflowBundlePath: inject('workflowBundlePath') });
  [api, receiver, tenant, browser] = await Promise.all([
    startApi(config, { host: '127.0.0.1' }),
    startReceiver(),
    createTenant(),
    chromium.launch({ executablePath, args: ['--no-sandbox'] }),
  ]);
  page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on('request', (r) => requested.push(r.url()));
  page.on('console', (m) => consoleMessages.push(m.text()));
  page.on('pageerror', (e) => pageErrors.push(e.message));
}, 600_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
  stopWorker.abort();
  await worker;
  await receiver?.close();
});

async function publish(entityId: string) {
  const data = {
    ...samples['crm.demand.created']!.data,
    entity_id: entityId,
    after_data: { ...demandRow(1), id: entityId },
  };
  const res = await fetch(`${api.url}/api/v1/events`, {
    method: 'POST',
    headers: { 'x-api-key': tenant.key, 'content-type': 'application/json' },
    body: JSON.stringify({ type: 'crm.demand.created', data }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: { id: string } }).data.id;
}

/** Polls as long as a delivery may take under load (expect.poll's default is one second). */
const poll = <T>(fn: () => Promise<T> | T) => expect.poll(fn, { timeout: 20_000, interval: 100 });
const card = () => page.locator('.endpoint').first();
const row = (status: string) => page.locator(`tr.delivery[data-event-type="crm.demand.created"][data-status="${status}"]`);

/** docs/<name> is refreshed only on request (CONSOLE_SCREENSHOT=1), so a test run leaves the work tree as it was. */
const screenshotPath = (name: string) =>
  process.env.CONSOLE_SCREENSHOT ? path.join(projectRoot, 'docs', name) : path.join(os.tmpdir(), `${process.pid}-${name}`);
const screenshot = (name: string) => page.screenshot({ path: screenshotPath(name), fullPage: true });

describe('the console in a browser', () => {
  it('signs in, creates and verifies an endpoint, shows deliveries arriving, failing and recovered', async () => {
    const response = await page.goto(`${api.url}/console`);
    expect(response!.headers()['content-security-policy']).toBe(CONSOLE_CSP);

    await page.fill('#api-key', tenant.key);
    await page.click('#signin-form button[type=submit]');
    await page.locator('#endpoints').getByText('No endpoint yet').waitFor();

    // An API error is shown as the SPEC envelope's code and message, not swallowed.
    await page.fill('#create-url', 'http://example.com/hooks');
    await page.click('#create-form button[type=submit]');
    await poll(() => page.textContent('#error')).toMatch(/^invalid_url: .+\(HTTP 422\)$/);

    await page.fill('#create-url', `https://localhost:${receiver.port}/hooks`);
    await page.check('#create-events input[value=crm]');
    await page.click('#create-form button[type=submit]');
    const secret = await page.locator('#secret-value').textContent();
    expect(secret!.length).toBeGreaterThanOrEqual(16);
    await poll(() => card().getAttribute('data-health')).toBe('unverified');
    expect(await page.isHidden('#error')).toBe(true);

    // Verify with the test button: the receiver gets a webhook.test signed with the secret shown once.
    await card().locator('button.test').click();
    await poll(() => card().getAttribute('data-health')).toBe('healthy');
    expect(await page.textContent('#notice')).toContain('HTTP 200');
    const test = receiver.received.at(-1)!;
    expect(test.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', secret!).update(test.body).digest('hex'));

    await card().locator('button.open').click();
    await page.locator('tr.delivery[data-event-type="webhook.test"][data-status="success"]').waitFor();

    // A published event's delivery shows up on its own (the panel refreshes).
    await publish('dem_01');
    await row('success').waitFor({ timeout: 30_000 });

    // The receiver fails: the failed delivery shows its attempt's code, error and response excerpt.
    receiver.reply({ status: 503, body: 'receiver down for maintenance' });
    const failedEventId = await publish('dem_02');
    await row('failed').waitFor({ timeout: 30_000 });
    await row('failed').click();
    const attempt = page.locator('#attempts tr.attempt[data-number="1"]');
    await poll(() => attempt.getAttribute('data-code')).toBe('503');
    expect(await attempt.getAttribute('data-error')).toBe('non_2xx');
    expect(await attempt.textContent()).toContain('receiver down for maintenance');

    // What was sent: the request as signed, the same bytes and signature the receiver got, its
    // JSON body pretty-printed and the exact text one click away.
    const sent = receiver.deliveriesUnder('/hooks').at(-1)!;
    const sentBody = sent.body.toString();
    const request = page.locator('#request');
    await poll(() => request.locator('pre.body.exact').textContent()).toBe(sentBody);
    expect(await request.getAttribute('data-attempt')).toBe('1');
    expect(await request.locator('tr[data-header="x-webhook-signature"] code').textContent()).toBe(sent.headers['x-webhook-signature']);
    expect(await request.locator('tr[data-header="x-webhook-event"] code').textContent()).toBe('crm.demand.created');
    expect(await request.locator('pre.body.pretty').textContent()).toBe(JSON.stringify(JSON.parse(sentBody), null, 2));
    await page.locator('#delivery-detail').screenshot({ path: screenshotPath('console-delivery.png') });

    // The receiver is back: a test brings the endpoint's streak to 0 (else the retry curve spaces
    // the next POST a minute after the failure), then recovering everything failed since
    // yesterday sends the delivery again now, long before its own retry.
    receiver.reply({ status: 200, body: 'ok' });
    await card().locator('button.test').click();
    await poll(() => page.textContent('#notice')).toContain('HTTP 200');
    await page.click('#recover-form button[type=submit]');
    await poll(() => page.textContent('#notice')).toMatch(/^Recovered 1 delivery/);
    await page.locator('#attempts tr.attempt[data-number="2"][data-code="200"]').waitFor({ timeout: 20_000 });
    await poll(() => row('failed').count()).toBe(0);
    await poll(() => row('success').count()).toBe(2);

    // The chart counts the attempts of the last 24 hours: two tests, two events' first attempts (one failed) and the recovered one.
    await page.click('#refresh');
    const chart = card().locator('svg.chart');
    await poll(async () => [await chart.getAttribute('data-successes'), await chart.getAttribute('data-failures')]).toEqual(['4', '1']);

    // The live stream polls from the cursor it keeps in this tab.
    await page.click('#stream-toggle');
    await poll(() => page.locator('#stream li[data-type="crm.demand.created"]').count()).toBe(2);
    expect(await page.evaluate(() => sessionStorage.getItem('webhookConsole.streamCursor'))).toMatch(/^\d+$/);

    // A stream entry opens its event (GET /events/{id}).
    await page.locator('#stream li[data-type="crm.demand.created"]').first().locator('button').click();
    const shownEvent = page.locator(`#event-json[data-event-id="${failedEventId}"]`);
    await shownEvent.waitFor();
    expect(JSON.parse((await shownEvent.textContent())!)).toMatchObject({ id: failedEventId, type: 'crm.demand.created' });

    await page.locator('#attempts tr.attempt[data-number="1"]').scrollIntoViewIfNeeded();
    await screenshot('console.png');
  });

  it('pauses an endpoint and reactivates it through a test', async () => {
    await card().locator('button.pause').click();
    await poll(() => card().getAttribute('data-active')).toBe('false');
    expect(await card().locator('.badge.inactive').textContent()).toBe('inactive');
    expect(await page.textContent('#notice')).toContain('held until a 2xx test');
    await card().locator('button.reactivate').click();
    await poll(() => card().getAttribute('data-active')).toBe('true');
    expect(await card().getAttribute('data-health')).toBe('healthy');
  });

  it('says why an endpoint fails and when it sends next, and "test now" after a recovery sends the held delivery at once', async () => {
    // An endpoint of its own, verified, whose receiver path alone goes down.
    await page.fill('#create-url', `https://localhost:${receiver.port}/failing`);
    await page.click('#create-form button[type=submit]');
    const failingCard = page.locator('.endpoint', { hasText: `localhost:${receiver.port}/failing` });
    await page.click('#secret button');
    await failingCard.locator('button.test').click();
    await poll(() => failingCard.getAttribute('data-health')).toBe('healthy');
    await failingCard.locator('button.open').click();
    // The panel still shows the endpoint opened before until this one's list arrives: wait for its one test.
    await poll(() => page.locator('tr.delivery[data-event-type="webhook.test"][data-status="success"]').count()).toBe(1);

    // The receiver is down: the delivery fails, the streak is 1 and the badge still says healthy (until streak 5).
    receiver.replyOn('/failing', { status: 503, body: 'down again' });
    await publish('dem_03');
    await row('failed').waitFor({ timeout: 30_000 });
    // (Streak 1 unless the retry a minute later came first on a busy machine.)
    const failing = failingCard.locator('.failing');
    await poll(async () => {
      await page.click('#refresh');
      return failing.count();
    }).toBe(1);
    expect(await failingCard.getAttribute('data-health')).toBe('healthy');
    expect(await failing.getAttribute('data-error-kind')).toBe('non_2xx');
    expect(await failing.getAttribute('data-error-code')).toBe('503');
    expect(await failing.textContent()).toMatch(/^failing: streak \d+, .+, because the receiver answered HTTP 503 \(non_2xx\)$/);
    expect(await failingCard.locator('.facts').textContent()).toContain('last error non_2xx 503');

    // Recovered on a failing endpoint, the delivery waits for the endpoint's next POST, and says so.
    await page.click('#recover-form button[type=submit]');
    await poll(() => page.textContent('#notice')).toMatch(/^Recovered 1 delivery/);
    await page.locator('#test-now-button').waitFor();
    expect(await page.textContent('#test-now')).toMatch(/is failing \(streak \d+\): the recovered deliveries wait for its next POST/);
    await row('pending').click();
    await poll(() => page.locator('#next-attempt').getAttribute('data-reason')).toBe('endpoint_pacing');
    expect(await page.textContent('#next-attempt')).toContain(
      "because it is first in line on a failing endpoint: it goes at the endpoint's next POST",
    );
    expect(await row('pending').locator('td.next').getAttribute('data-reason')).toBe('endpoint_pacing');
    // The list re-renders its cards when it refreshes: a card found just before one may be gone by the scroll.
    await poll(() =>
      failingCard.scrollIntoViewIfNeeded({ timeout: 2_000 }).then(
        () => true,
        () => false,
      ),
    ).toBe(true);
    await screenshot('console-failing.png');

    // The receiver is back (only now: a next POST that came first would have failed again and
    // kept the same reason); "test now" closes the circuit and the held delivery goes at once.
    receiver.replyOn('/failing', null);
    await page.click('#test-now-button');
    await poll(() => page.textContent('#notice')).toContain('HTTP 200, now healthy');
    await poll(() => row('pending').count()).toBe(0);
    await poll(() => row('failed').count()).toBe(0);
    await poll(() => row('success').count()).toBe(1);
    await poll(() => failingCard.locator('.failing').count()).toBe(0);
    expect(await page.isHidden('#test-now')).toBe(true);
  });

  it('edits an endpoint (url, categories, Authorization, rate_limit, description), rotates and sets its secret, deletes it after a confirm', async () => {
    // A second endpoint of its own, so the first one's deliveries stay as they are.
    await page.fill('#create-url', `https://localhost:${receiver.port}/second`);
    await page.click('#create-form button[type=submit]');
    const second = page.locator('.endpoint', { hasText: `localhost:${receiver.port}/second` });
    await second.waitFor();
    await page.click('#secret button');
    const id = (await second.getAttribute('data-endpoint-id'))!;
    const stored = async () => {
      const res = await fetch(`${api.url}/api/v1/webhooks/${id}`, { headers: { 'x-api-key': tenant.key } });
      return res.status === 404 ? null : ((await res.json()) as { data: Record<string, unknown> }).data;
    };

    await second.locator('button.edit').click();
    const edit = page.locator(`#edit-panel[data-endpoint-id="${id}"]`);
    await edit.waitFor();
    await page.fill('#edit-url', `https://localhost:${receiver.port}/second-edited`);
    await page.uncheck('#edit-events input[value=statuses]');
    await page.check('#edit-events input[value=crm]');
    await page.fill('#edit-authorization', 'Bearer console-test');
    await page.fill('#edit-rate-limit', '7');
    await page.fill('#edit-description', 'Orders service, staging');
    await page.screenshot({ path: screenshotPath('console-edit.png'), fullPage: true });
    await page.click('#edit-form button[type=submit]');
    await poll(() => page.textContent('#notice')).toMatch(
      /^Saved https:\/\/localhost:\d+\/second-edited: url, events, headers, rate_limit, description changed/,
    );
    expect(await stored()).toMatchObject({
      url: `https://localhost:${receiver.port}/second-edited`,
      events: ['messages', 'crm'],
      has_authorization: true,
      rate_limit: 7,
      description: 'Orders service, staging',
    });
    const edited = page.locator(`.endpoint[data-endpoint-id="${id}"]`);
    await poll(() => edited.locator('.description').textContent()).toBe('Orders service, staging');

    // Clearing the rate limit and the description, removing the Authorization header.
    await page.fill('#edit-rate-limit', '');
    await page.fill('#edit-description', '');
    await page.check('#edit-authorization-remove');
    await page.click('#edit-form button[type=submit]');
    await poll(() => page.textContent('#notice')).toContain('headers, rate_limit, description changed');
    expect(await stored()).toMatchObject({ has_authorization: false, rate_limit: null, description: null });

    // Rotating the secret: the new one is shown once, and the next test is signed with it.
    await page.click('#rotate-secret');
    const rotated = (await page.locator('#edit-secret #secret-value').textContent())!;
    expect(rotated).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await edited.locator('button.test').click();
    await poll(() => page.textContent('#notice')).toContain('HTTP 200');
    const signedWithRotated = receiver.received.at(-1)!;
    expect(signedWithRotated.path).toBe('/second-edited');
    const key = Buffer.from(rotated.slice('whsec_'.length), 'base64');
    const webhookId = signedWithRotated.headers['webhook-id'] as string;
    const timestamp = signedWithRotated.headers['webhook-timestamp'] as string;
    const expected = crypto
      .createHmac('sha256', key)
      .update(`${webhookId}.${timestamp}.${signedWithRotated.body.toString()}`)
      .digest('base64');
    expect(signedWithRotated.headers['webhook-signature']).toBe(`v1,${expected}`);

    // Setting one of its own: a refused one says why, an accepted one is shown once and signs.
    await page.fill('#own-secret', 'too-short');
    await page.click('#set-secret');
    await poll(() => page.textContent('#error')).toMatch(/^invalid_secret: .+\(HTTP 422\)$/);
    const own = 'my-own-secret-of-32-characters!!';
    await page.fill('#own-secret', own);
    await page.click('#set-secret');
    await poll(() => page.locator('#edit-secret #secret-value').textContent()).toBe(own);
    await edited.locator('button.test').click();
    await poll(() => page.textContent('#notice')).toContain('HTTP 200');
    const signedWithOwn = receiver.received.at(-1)!;
    expect(signedWithOwn.headers['x-webhook-signature']).toBe(crypto.createHmac('sha256', own).update(signedWithOwn.body).digest('hex'));

    // Delete asks first: dismissed, nothing happens; accepted, the endpoint is gone.
    page.once('dialog', (d) => void d.dismiss());
    await page.click('#delete-endpoint');
    expect(await stored()).not.toBeNull();
    page.once('dialog', (d) => void d.accept());
    await page.click('#delete-endpoint');
    await poll(() => page.textContent('#notice')).toMatch(/^Deleted https:\/\/localhost:\d+\/second-edited\.$/);
    expect(await stored()).toBeNull();
    await poll(() => edited.count()).toBe(0);
    expect(await page.isHidden('#edit-panel')).toBe(true);
  });

  it('keeps the key in sessionStorage only: never in a URL, localStorage or a cookie; signing out forgets it', async () => {
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem('webhookConsole.apiKey'),
      local: localStorage.length,
      cookie: document.cookie,
    }));
    expect(storage).toEqual({ session: tenant.key, local: 0, cookie: '' });
    expect(requested.length).toBeGreaterThan(10);
    expect(requested.filter((u) => u.includes(tenant.key) || u.includes(encodeURIComponent(tenant.key)))).toEqual([]);
    expect(page.url()).toBe(`${api.url}/console`);
    // The page ran whole under its CSP: nothing refused, no script error.
    expect(consoleMessages.filter((m) => /Content.Security.Policy/i.test(m))).toEqual([]);
    expect(pageErrors).toEqual([]);

    await page.click('#sign-out');
    expect(await page.evaluate(() => sessionStorage.getItem('webhookConsole.apiKey'))).toBeNull();
    expect(await page.isVisible('#signin')).toBe(true);
  });
});
