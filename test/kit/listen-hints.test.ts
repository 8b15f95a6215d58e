/**
 * What `webhooks listen` prints a person to do next agrees with the README: the endpoint it tells
 * them to create subscribes to what the quickstart shows arriving, and the CA file the README's
 * dev-mode command names (evaluated by bash, XDG_CONFIG_HOME set or not) is the one it made.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { shBlock } from '../support/readme-shell.js';
import { WEBHOOKS_CLI } from '../support/webhooks-cli.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const homes: string[] = [];
afterAll(() => homes.forEach((h) => fs.rmSync(h, { recursive: true, force: true })));

/** `webhooks listen` until it printed its hints (stderr), then stopped. */
async function listenHints(env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn(process.execPath, [...WEBHOOKS_CLI, 'listen', '--port', '0', '--secret', 'whsec_hint_0123456789'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (/^Then: .*$/m.test(err)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`listen exited (${code}):\n${err}`)));
  });
  child.kill('SIGINT');
  return err;
}

/** The quickstart's Terminal 1 command, with its variables expanded by bash in `env`. */
function readmeCaFile(env: NodeJS.ProcessEnv): string {
  const line = shBlock(readme, '## Five-minute quickstart')
    .split('\n')
    .find((l) => l.startsWith('WEBHOOKS_DEV_MODE=1 '))!;
  const expr = line.match(/WEBHOOKS_DEV_CA_FILE=(\S+)/)![1]!;
  return execFileSync('bash', ['-c', `echo ${expr}`], { env, encoding: 'utf8' }).trim();
}

describe('webhooks listen: its hints and the README', () => {
  it('hints an endpoint with --events crm,statuses, the quickstart endpoint categories (the message statuses arrive)', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'listen-hints-'));
    homes.push(home);
    const out = await listenHints({ ...process.env, HOME: home, XDG_CONFIG_HOME: '', WEBHOOKS_CONFIG: '' });
    const hint = out.match(/^Then: (.*)$/m)![1]!;
    expect(hint).toContain('--events crm,statuses ');
    expect(readme).toContain('--events crm,statuses --secret');
  });

  for (const xdg of [undefined, 'xdg']) {
    it(`the README's WEBHOOKS_DEV_CA_FILE is the CA listen made and prints, ${xdg ? 'with' : 'without'} XDG_CONFIG_HOME`, async () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'listen-hints-'));
      homes.push(home);
      const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, WEBHOOKS_CONFIG: '' };
      delete env.XDG_CONFIG_HOME;
      if (xdg) env.XDG_CONFIG_HOME = path.join(home, xdg);
      const out = await listenHints(env);
      const caFile = readmeCaFile(env);
      expect(fs.existsSync(caFile)).toBe(true);
      expect(out).toContain(`WEBHOOKS_DEV_CA_FILE=${caFile} npm start`);
      if (xdg) expect(caFile.startsWith(path.join(home, xdg))).toBe(true);
    });
  }
});
