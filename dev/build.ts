/**
 * `npm run build`, after `tsc -p tsconfig.build.json` compiled the service into dist/: copies the
 * files the compiled code reads at run time (the SQL migrations, the console's static files) to
 * where it looks for them, and bundles the workflow code once into dist/workflow-bundle.js, which
 * the production worker loads instead of running webpack at each start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { projectRoot } from './tools.js';

const dist = path.join(projectRoot, 'dist');
export const WORKFLOW_BUNDLE = 'workflow-bundle.js';

/** Copies a folder's files (not its subfolders) whose names end with one of `extensions`. */
function copyFiles(from: string, to: string, extensions: string[]): number {
  fs.mkdirSync(to, { recursive: true });
  const names = fs.readdirSync(from).filter((n) => extensions.some((e) => n.endsWith(e)));
  for (const name of names) fs.copyFileSync(path.join(from, name), path.join(to, name));
  return names.length;
}

async function main() {
  const compiledWorkflows = path.join(dist, 'src', 'workflows', 'index.js');
  if (!fs.existsSync(compiledWorkflows)) throw new Error(`${compiledWorkflows} is missing: run tsc -p tsconfig.build.json first`);
  const migrations = copyFiles(path.join(projectRoot, 'src', 'db', 'migrations'), path.join(dist, 'src', 'db', 'migrations'), ['.sql']);
  const assets = copyFiles(path.join(projectRoot, 'console'), path.join(dist, 'console'), ['.html', '.js', '.css']);
  const bundle = await bundleWorkflowCode({
    workflowsPath: compiledWorkflows,
    logger: { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as never,
  });
  fs.writeFileSync(path.join(dist, WORKFLOW_BUNDLE), bundle.code);
  console.log(
    `dist/: ${migrations} migrations, ${assets} console files, ${WORKFLOW_BUNDLE} (${Math.round(bundle.code.length / 1024)} KiB)`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(projectRoot, 'dev', 'build.ts')) await main();
