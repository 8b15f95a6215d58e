/** Where the CLI keeps its key and base URL, and how the environment overrides them. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_BASE_URL } from '@webhook-platform/sdk';

export interface StoredConfig {
  api_key?: string;
  base_url?: string;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.WEBHOOKS_CONFIG) return path.resolve(env.WEBHOOKS_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'webhooks', 'config.json');
}

/** The folder of the config file; `listen` keeps its certificate there too. */
export const configDir = (env: NodeJS.ProcessEnv = process.env) => path.dirname(configPath(env));

export function readConfig(env: NodeJS.ProcessEnv = process.env): StoredConfig {
  try {
    return JSON.parse(fs.readFileSync(configPath(env), 'utf8')) as StoredConfig;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new Error(`cannot read ${configPath(env)}: ${(err as Error).message}`, { cause: err });
  }
}

export function writeConfig(config: StoredConfig, env: NodeJS.ProcessEnv = process.env): string {
  const file = configPath(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // The file holds an API key: readable by its owner only, also when it already existed with wider rights.
  fs.writeFileSync(file, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return file;
}

/** The key and base URL in force: flags, then WEBHOOKS_API_KEY / WEBHOOKS_BASE_URL, then the stored config. */
export function resolveSettings(flags: { apiKey?: string; baseUrl?: string }, env: NodeJS.ProcessEnv = process.env) {
  const stored = readConfig(env);
  return {
    apiKey: flags.apiKey || env.WEBHOOKS_API_KEY || stored.api_key,
    baseUrl: flags.baseUrl || env.WEBHOOKS_BASE_URL || stored.base_url || DEFAULT_BASE_URL,
  };
}
