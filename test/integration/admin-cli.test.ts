/**
 * `webhooks-admin`, the operator CLI under its own name (the root package's bin): a record by
 * default, JSON with --json, and the exit codes of `webhooks` (0 ok, 1 error from the database,
 * 2 usage, 3 cannot reach the database). `npm run cli` stays the JSON form scripts rely on.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../dev/tools.js';

const BIN = path.join(projectRoot, 'cli', 'webhooks-admin.js');
const NO_SUCH_ACCOUNT = '00000000-0000-4000-8000-000000000000';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: projectRoot, env: { ...process.env, DATABASE_URL: inject('databaseUrl'), ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0;
        resolve({ code: typeof code === 'number' ? code : -1, stdout, stderr });
      },
    );
  });
}

const admin = (...args: string[]) => run(process.execPath, [BIN, ...args]);
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** The `field  value` lines of a record, as a map. */
const fields = (stdout: string) =>
  new Map(
    stdout
      .trimEnd()
      .split('\n')
      .map((l) => [l.split(/\s+/)[0], l.replace(/^\S+\s+/, '')]),
  );

describe('webhooks-admin', () => {
  it('is the root package bin and npm run admin; npm run cli is the same tool with --json', async () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(projectRoot, 'package.json'), 'utf8'));
    expect(pkg.bin).toEqual({ 'webhooks-admin': './cli/webhooks-admin.js' });
    // npm run admin runs the same tool: the same usage, and a record by default.
    const npmRun = (script: string, ...args: string[]) => run(NPM, ['run', '--silent', script, '--', ...args]);
    const [binHelp, adminHelp] = [await admin('--help'), await npmRun('admin', '--help')];
    expect(adminHelp).toMatchObject({ code: 0, stdout: binHelp.stdout });
    expect(binHelp.stdout).toContain('usage: webhooks-admin');
    const created = await npmRun('admin', 'account', 'create', '--name', 'Run Co', '--owner-email', 'run@admin.test');
    expect(created.code, created.stderr).toBe(0);
    expect(fields(created.stdout).get('name')).toBe('Run Co');
    // npm run cli: the same command answers JSON.
    const json = await npmRun('cli', 'account', 'create', '--name', 'Json Co', '--owner-email', 'json@admin.test');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'Json Co', plan: 'free' });
  });

  it('prints a record by default and JSON with --json', async () => {
    const human = await admin('account', 'create', '--name', 'Admin Co', '--owner-email', 'ops@admin.test');
    expect(human.code).toBe(0);
    expect(() => JSON.parse(human.stdout)).toThrow();
    const account = fields(human.stdout);
    expect(account.get('id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(account.get('name')).toBe('Admin Co');
    expect(account.get('plan')).toBe('free');

    const key = await admin(
      'key',
      'create',
      '--account',
      account.get('id')!,
      '--env',
      'live',
      '--scopes',
      'webhooks:read,events:read',
      '--json',
    );
    expect(key.code).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({
      account_id: account.get('id'),
      environment: 'live',
      scopes: ['webhooks:read', 'events:read'],
      key: expect.stringMatching(/^wh_live_/),
    });
  });

  it('exits 1 when the database has no such row, with nothing on stdout', async () => {
    for (const json of [[], ['--json']]) {
      const missing = await admin('customer', 'create', '--account', NO_SUCH_ACCOUNT, '--name', 'x', ...json);
      expect(missing).toMatchObject({ code: 1, stdout: '' });
      expect(missing.stderr).toContain(`account ${NO_SUCH_ACCOUNT} does not exist`);
    }
  });

  it('exits 2 on usage errors, and prints the usage on --help with 0', async () => {
    const noArgs = await admin();
    expect(noArgs.code).toBe(2);
    expect(noArgs.stderr).toContain('usage: webhooks-admin');
    const unknown = await admin('account', 'explode');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "account explode"');
    const badValue = await admin('account', 'create', '--name', 'x', '--owner-email', 'not-an-email');
    expect(badValue).toMatchObject({ code: 2, stdout: '' });
    expect(badValue.stderr).toContain('--owner-email');
    const badOption = await admin('account', 'create', '--name', 'x', '--colour', 'red');
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain('--colour');
    const help = await admin('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 error from the database');
  });

  it('exits 3 when the database cannot be reached', async () => {
    const result = await run(process.execPath, [BIN, 'account', 'create', '--name', 'x', '--owner-email', 'a@b.test'], {
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    });
    expect(result).toMatchObject({ code: 3, stdout: '' });
    expect(result.stderr).toContain('cannot reach the database');
  });

  it('npm run --silent cli prints the JSON that the README pipes into a field', async () => {
    const result = await run(NPM, [
      'run',
      '--silent',
      'cli',
      '--',
      'account',
      'create',
      '--name',
      'Script Co',
      '--owner-email',
      's@admin.test',
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ name: 'Script Co', owner_email: 's@admin.test' });
  });
});
