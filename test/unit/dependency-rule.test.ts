import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../dev/tools.js';
// @ts-expect-error eslint.config.js is plain JavaScript without type declarations
import { LAYERS } from '../../eslint.config.js';

const layers = LAYERS as Record<string, string[]>;
const eslint = new ESLint({ cwd: projectRoot });

/** The no-restricted-imports messages lint gives `code` as if it were the file at `file`. */
async function refusals(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(projectRoot, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

/** Room → the rooms its files import, read from the code of src/ (type imports included). */
function importedRooms(): Map<string, Set<string>> {
  const src = path.join(projectRoot, 'src');
  const roomOf = (rel: string) => (rel.includes('/') ? rel.split('/')[0]! : rel.replace(/\.ts$/, ''));
  const graph = new Map<string, Set<string>>();
  for (const rel of fs.readdirSync(src, { recursive: true }) as string[]) {
    if (!rel.endsWith('.ts')) continue;
    const from = roomOf(rel);
    const text = fs.readFileSync(path.join(src, rel), 'utf8');
    for (const [, spec] of text.matchAll(/from\s+'(\.[^']+)'/g)) {
      const target = path.relative(src, path.resolve(path.dirname(path.join(src, rel)), spec!));
      const to = roomOf(target);
      if (to !== from) graph.set(from, (graph.get(from) ?? new Set()).add(to.replace(/\.js$/, '')));
    }
  }
  return graph;
}

describe('the dependency rule (ARCHITECTURE.md, eslint.config.js LAYERS)', () => {
  it('orders the rooms: each imports only rooms listed before it, so no circle can pass lint', () => {
    const seen: string[] = [];
    for (const [room, allowed] of Object.entries(layers)) {
      expect(
        allowed.filter((r) => !seen.includes(r)),
        room,
      ).toEqual([]);
      seen.push(room);
    }
  });

  it('covers every room of src/, and the code imports only what its room allows', () => {
    const rooms = fs.readdirSync(path.join(projectRoot, 'src')).map((n) => n.replace(/\.ts$/, ''));
    expect(rooms.sort()).toEqual(Object.keys(layers).sort());
    for (const [from, tos] of importedRooms())
      expect(
        [...tos].filter((to) => !layers[from]!.includes(to)),
        from,
      ).toEqual([]);
  });

  it('is the graph ARCHITECTURE.md draws', () => {
    const doc = fs.readFileSync(path.join(projectRoot, 'ARCHITECTURE.md'), 'utf8');
    const drawn = Object.fromEntries(
      [...doc.matchAll(/^\| `src\/([a-z]+)(?:\/|\.ts)` \| ([^|]*) \|/gm)].map(([, room, imports]) => [
        room!,
        imports!.trim() === '(nothing)' ? [] : imports!.split(',').map((s) => s.trim().replace(/`/g, '')),
      ]),
    );
    expect(drawn).toEqual(layers);
  });

  it('fails lint on an upward import: db/ reaching api/, events/ reaching channels/', async () => {
    expect(await refusals('src/db/pool.ts', `import { createApp } from '../api/app.js';\nexport const x = createApp;\n`)).toEqual([
      expect.stringMatching(/src\/db imports only core, runtime, security/),
    ]);
    const upward = `import type { InboundDeps } from '../channels/inbound/inbound-deps.js';\nexport type X = InboundDeps;\n`;
    expect(await refusals('src/events/deps.ts', upward)).toHaveLength(1);
  });

  it('fails lint when workflows/ import the activities, even for a type, or the service imports the tooling', async () => {
    const typeOnly = `import type { SessionDeps } from '../delivery/delivery-session.js';\nexport type X = SessionDeps;\n`;
    expect(await refusals('src/workflows/search-attributes.ts', typeOnly)).toHaveLength(1);
    const tooling = `import { projectRoot } from '../../dev/tools.js';\nexport const x = projectRoot;\n`;
    expect(await refusals('src/api/main.ts', tooling)).toEqual([expect.stringMatching(/never imports the tooling/)]);
  });

  it('lets a downhill import pass: api/ reaching db/ and delivery/', async () => {
    const downhill = `import { createPool } from '../db/pool.js';\nimport { sendToEndpoint } from '../delivery/send-webhook.js';\nexport const x = [createPool, sendToEndpoint];\n`;
    expect(await refusals('src/api/main.ts', downhill)).toEqual([]);
  });
});
