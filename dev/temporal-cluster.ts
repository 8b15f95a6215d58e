/**
 * A real Temporal server (not the dev server) persisting to Postgres, with its Web UI, for the
 * production shape: the databases `temporal` and `temporal_visibility` are created and their
 * schema set up and updated by Temporal's own SQL tool from the server module's versioned schema
 * directories; the server's configuration is written into the shape's data folder at each start.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { databaseExists } from '../src/db/server-databases.js';
import { ensureSearchAttributes } from '../src/delivery/workflow-client.js';
import { alive, managedProcess, type ManagedProcess } from './children.js';
import { freePort, waitForHttp } from './ports.js';
import { ensureTemporalServerTools, type TemporalServerTools } from './tools.js';

interface PostgresTarget {
  host: string;
  port: number;
  user: string;
  password: string;
}

function postgresTarget(databaseUrl: string): PostgresTarget {
  const u = new URL(databaseUrl);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
  };
}

const DATABASES = [
  { name: 'temporal', schema: 'temporal' },
  { name: 'temporal_visibility', schema: 'visibility' },
] as const;

/** Runs the SQL tool against one database; its output goes to the log file, a failure throws with it. */
function sqlTool(tools: TemporalServerTools, target: PostgresTarget, db: string, args: string[], log: number): void {
  const common = ['--plugin', 'postgres12', '--ep', target.host, '-p', String(target.port), '-u', target.user, '--db', db];
  // The password goes through the environment, not the command line other users can read.
  const env = { ...process.env, SQL_PASSWORD: target.password };
  const result = spawnSync(tools.sqlTool, [...common, ...args], { env, encoding: 'utf8' });
  fs.writeSync(log, `$ temporal-sql-tool --db ${db} ${args.join(' ')}\n${result.stdout}${result.stderr}`);
  if (result.status !== 0) throw new Error(`temporal-sql-tool ${args[0]} on ${db} failed:\n${result.stderr || result.stdout}`);
}

/** Creates the two databases when missing (and then sets their schema up at 0.0), and updates both to the server's version. */
async function setupSchema(tools: TemporalServerTools, databaseUrl: string, log: number): Promise<void> {
  const target = postgresTarget(databaseUrl);
  for (const db of DATABASES) {
    if (!(await databaseExists(databaseUrl, db.name))) {
      sqlTool(tools, target, db.name, ['create-database', '--defaultdb', new URL(databaseUrl).pathname.slice(1) || 'postgres'], log);
      sqlTool(tools, target, db.name, ['setup-schema', '-v', '0.0'], log);
    }
    const versioned = path.join(tools.schemaDir, 'postgresql', 'v12', db.schema, 'versioned');
    sqlTool(tools, target, db.name, ['update-schema', '-d', versioned], log);
  }
}

interface ServerPorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  membership: [number, number, number, number];
}

/** The server's configuration (postgres12 for both stores, four history shards, everything on loopback). */
function serverConfigYaml(target: PostgresTarget, ports: ServerPorts, dynamicConfigFile: string): string {
  const store = (db: string, conns: number) => `      sql:
        pluginName: postgres12
        databaseName: ${db}
        connectAddr: "${target.host}:${target.port}"
        connectProtocol: tcp
        user: ${JSON.stringify(target.user)}
        password: ${JSON.stringify(target.password)}
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, membership: number, http?: number) => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  return `# Written by the production-shape launcher (dev/temporal-cluster.ts) at each start.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:
${store('temporal', 20)}
    visibility:
${store('temporal_visibility', 5)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
services:
  frontend:
${service(ports.frontend, ports.membership[0], ports.frontendHttp)}
  history:
${service(ports.history, ports.membership[1])}
  matching:
${service(ports.matching, ports.membership[2])}
  worker:
${service(ports.worker, ports.membership[3])}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: 127.0.0.1:${ports.frontend}
      httpAddress: 127.0.0.1:${ports.frontendHttp}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${JSON.stringify(dynamicConfigFile)}
  pollInterval: 60s
`;
}

/**
 * One partition for the task queue (the default is four): a few workers poll it, and with four
 * partitions most tasks found no poller on their partition, were written to Postgres and waited
 * to be forwarded, which cost a database round trip and tens of milliseconds per wake-up. A
 * deployment whose queue outgrows one matching partition raises both values again.
 */
const DYNAMIC_CONFIG_YAML = `# Written by the production-shape launcher (dev/temporal-cluster.ts) at each start.
matching.numTaskqueueReadPartitions:
  - value: 1
matching.numTaskqueueWritePartitions:
  - value: 1
# A workflow task that schedules an activity gets it back in its answer (eager dispatch, which
# the SDK asks for by default): a wake-up's delivery session skips matching.
system.enableActivityEagerExecution:
  - value: true
`;

function uiConfigYaml(frontend: number, uiPort: number, namespace: string): string {
  return `# Written by the production-shape launcher (dev/temporal-cluster.ts) at each start.
temporalGrpcAddress: 127.0.0.1:${frontend}
host: 127.0.0.1
port: ${uiPort}
enableUi: true
defaultNamespace: ${namespace}
cors:
  allowOrigins: []
`;
}

const GRPC_ALREADY_EXISTS = 6;

/** Registers the namespace (the server creates none by itself) once the frontend answers, and the workflow's search attributes. */
async function registerNamespace(address: string, namespace: string, isAlive: () => boolean): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.workflowService
          .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') })
          .catch((err: { code?: number }) => {
            if (err.code !== GRPC_ALREADY_EXISTS) throw err;
          });
        await ensureSearchAttributes(connection, namespace);
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (!isAlive()) throw new Error('the Temporal server exited while starting; see temporal-server.log', { cause: err });
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export interface TemporalCluster {
  /** host:port of the frontend. */
  address: string;
  uiUrl: string;
  server: ManagedProcess;
  ui: ManagedProcess;
}

/** Sets the schema up, then starts the server (ready once the namespace is registered) and the Web UI. */
export async function startTemporalCluster(opts: {
  dir: string;
  databaseUrl: string;
  namespace: string;
  frontendPort?: number;
  uiPort?: number;
  /** Start the server and the UI again when they crash (children.ts managedProcess). */
  respawn?: { say: (line: string) => void };
}): Promise<TemporalCluster> {
  const tools = await ensureTemporalServerTools();
  const configDir = path.join(opts.dir, 'config');
  const uiConfigDir = path.join(opts.dir, 'ui-config');
  fs.mkdirSync(configDir, { recursive: true });
  fs.mkdirSync(uiConfigDir, { recursive: true });
  const log = fs.openSync(path.join(opts.dir, 'temporal-server.log'), 'a');
  await setupSchema(tools, opts.databaseUrl, log);

  // freePort's are below 32768, as the membership table (ports as smallint) needs.
  const port = freePort;
  const ports: ServerPorts = {
    frontend: opts.frontendPort ?? (await port()),
    frontendHttp: await port(),
    history: await port(),
    matching: await port(),
    worker: await port(),
    membership: [await port(), await port(), await port(), await port()],
  };
  const dynamicConfigFile = path.join(configDir, 'dynamic.yaml');
  fs.writeFileSync(dynamicConfigFile, DYNAMIC_CONFIG_YAML);
  const serverYaml = serverConfigYaml(postgresTarget(opts.databaseUrl), ports, dynamicConfigFile);
  fs.writeFileSync(path.join(configDir, 'production.yaml'), serverYaml, { mode: 0o600 });
  const uiPort = opts.uiPort ?? (await freePort());
  fs.writeFileSync(path.join(uiConfigDir, 'production.yaml'), uiConfigYaml(ports.frontend, uiPort, opts.namespace));
  const address = `127.0.0.1:${ports.frontend}`;

  const server = managedProcess({
    name: 'temporal-server',
    launch: () =>
      spawn(tools.server, ['--root', opts.dir, '--config', 'config', '--env', 'production', '--allow-no-auth', 'start'], {
        stdio: ['ignore', log, log],
      }),
    ready: (child) => registerNamespace(address, opts.namespace, alive(child)),
    respawn: opts.respawn,
  });
  const uiLog = fs.openSync(path.join(opts.dir, 'temporal-ui.log'), 'a');
  const ui = managedProcess({
    name: 'temporal-ui-server',
    launch: () =>
      spawn(tools.uiServer, ['--root', opts.dir, '--config', 'ui-config', '--env', 'production', 'start'], {
        stdio: ['ignore', uiLog, uiLog],
      }),
    ready: (child) =>
      waitForHttp(`http://127.0.0.1:${uiPort}/api/v1/namespaces/${opts.namespace}`, 'Temporal Web UI', 60_000, alive(child)),
    respawn: opts.respawn,
  });
  await server.start();
  await ui.start();
  return { address, uiUrl: `http://127.0.0.1:${uiPort}`, server, ui };
}
