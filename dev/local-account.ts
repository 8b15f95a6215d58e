/** The local Account `npm start` and `npm run production` create on their first run, with its keys printed once. */
import path from 'node:path';
import { issueApiKey } from '../src/db/api-keys.js';
import { createAccount, firstAccountId } from '../src/db/directory.js';
import { createPool } from '../src/db/pool.js';
import { SCOPES } from '../src/security/api-key.js';

/** The operator CLI command that issues a live key with all scopes, as it runs from this folder. */
function keyCreateCommand(accountId: string, dataDir: string): string {
  const env = dataDir === path.resolve('.data') ? '' : `DATA_DIR=${dataDir} `;
  return `${env}npm run --silent cli -- key create --account ${accountId} --env live --scopes ${SCOPES.join(',')}`;
}

/**
 * On first run, a local Account with a live and a sandbox key, printed once. Returns the live
 * key then, or the command that makes one on a later start (keys are stored as hashes only).
 */
export async function bootstrapLocalAccount(
  databaseUrl: string,
  dataDir: string,
  say: (line: string) => void,
): Promise<{ liveKey?: string; keyCommand: string }> {
  const db = createPool(databaseUrl, 1);
  try {
    const existing = await firstAccountId(db);
    if (existing) {
      const keyCommand = keyCreateCommand(existing, dataDir);
      say(`API keys are shown only on the first run. A new key for Account ${existing}: ${keyCommand}`);
      return { keyCommand };
    }
    const account = await createAccount(db, { name: 'Local account', ownerEmail: 'owner@localhost', plan: 'paid' });
    const live = await issueApiKey(db, { accountId: account.id, environment: 'live', scopes: [...SCOPES] });
    const sandbox = await issueApiKey(db, { accountId: account.id, environment: 'sandbox', scopes: [...SCOPES] });
    say('');
    say(`First run: created Account ${account.id} ("Local account").`);
    say(`  live API key:    ${live.key}`);
    say(`  sandbox API key: ${sandbox.key}`);
    const keyCommand = keyCreateCommand(account.id, dataDir);
    say(`These keys are shown only now; only their hashes are stored. Make more with: ${keyCommand}`);
    return { liveKey: live.key, keyCommand };
  } finally {
    await db.end();
  }
}
