/**
 * `npm run production`: the production shape on this machine, no Docker (dev/production-shape.ts):
 * Postgres (embedded unless DATABASE_URL), a Temporal server on it with the Web UI,
 * API_PROCESSES compiled API processes on PORT and WORKER_PROCESSES workers (2 and 2 by default).
 * Its state lives in DATA_DIR/production. Ctrl-C stops it in order.
 */
import { z } from 'zod';
import { devModeWarning, loadConfig } from '../src/runtime/config.js';
import { leaveSignalsToCaller } from './embedded-postgres.js';
import { bootstrapLocalAccount } from './local-account.js';
import { onParentGone, runInOwnProcessGroup } from './own-process-group.js';
import { isPortOpen, preferredPort } from './ports.js';
import { processCount, productionDataDir, startProductionShape, type ProductionShape } from './production-shape.js';

const say = (line: string) => process.stdout.write(`${line}\n`);
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const processes = z.coerce.number().int().min(1).max(64);

function printStarted(shape: ProductionShape, started: number, keys: { liveKey?: string; keyCommand: string }): void {
  say('');
  say(`Production shape up in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
  say(`API:             ${shape.apiUrl}  (${processCount(shape.apis.length)} on one port; reference: ${shape.apiUrl}/docs)`);
  say(`Workers:         ${processCount(shape.workers.length)}`);
  say(`Temporal Web UI: ${shape.uiUrl}`);
  say(`Temporal:        ${shape.temporalAddress}  (server on Postgres)`);
  say(`Logs:            ${shape.dataDir}/logs, ${shape.dataDir}/temporal`);
  if (keys.liveKey) say(`Live API key:    ${keys.liveKey}`);
  say('Ctrl-C stops everything (APIs, workers, Web UI, Temporal, Postgres).');
}

async function main() {
  const started = Date.now();
  const config = loadConfig();
  // The API and worker processes log it to their files; the person who started the shape sees it here.
  const warning = devModeWarning(config);
  if (warning) say(warning);
  const apiPort = config.port;
  if (await isPortOpen(apiPort)) throw new Error(`Port ${apiPort} is taken; set PORT.`);
  let stopping = false;
  const running: { shape?: ProductionShape } = {};
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    say('Stopping...');
    // While starting, the start finishes first and then stops (its half-started parts have no handle yet).
    if (!running.shape) return;
    await running.shape.stop();
    process.exit(0);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => void shutdown());
  onParentGone(() => void shutdown());
  const shape = await startProductionShape({
    dataDir: productionDataDir(config.dataDir),
    databaseUrl: config.databaseUrl,
    apiProcesses: processes.parse(process.env.API_PROCESSES ?? 2),
    workerProcesses: processes.parse(process.env.WORKER_PROCESSES ?? 2),
    apiPort,
    temporalPort: await preferredPort(config.devServerPorts.frontend),
    uiPort: await preferredPort(config.devServerPorts.ui),
    say,
  });
  running.shape = shape;
  if (stopping) {
    await shape.stop();
    process.exit(0);
  }
  const keys = await bootstrapLocalAccount(shape.databaseUrl, shape.dataDir, say);
  printStarted(shape, started, keys);
}

// This process stops its parts itself, in order (it imports embedded-postgres, whose hooks would not).
leaveSignalsToCaller();
if (!runInOwnProcessGroup())
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
