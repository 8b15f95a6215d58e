/**
 * dev/dockerfile-build.ts refuses what it cannot carry out faithfully, instead of skipping it:
 * an unsupported instruction, a base image the local Node cannot stand in for, a .dockerignore
 * exception. And the repo's own Dockerfile and .dockerignore are within what it supports.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDockerfile, checkBaseImage, parseDockerfile, readDockerignore } from '../../dev/dockerfile-build.js';
import { projectRoot } from '../../dev/tools.js';

const major = process.versions.node.split('.')[0];

describe('dev/dockerfile-build.ts', () => {
  it('parses instructions with continuations and comments, and names an unsupported one with its line', () => {
    expect(parseDockerfile('# c\nFROM node:20 AS a\nRUN echo 1 && \\\n  # inside\n  echo 2\n')).toEqual([
      { keyword: 'FROM', args: 'node:20 AS a', line: 2 },
      { keyword: 'RUN', args: 'echo 1 && echo 2', line: 3 },
    ]);
    expect(() => parseDockerfile('FROM node:20\nHEALTHCHECK CMD true\n')).toThrow(/line 2: HEALTHCHECK is not supported/);
    expect(() => parseDockerfile('FROM node:20\narg X=1\n')).toThrow(/line 2: ARG is not supported/);
  });

  it('accepts only node:<major> of the local Node as a base image', () => {
    expect(() => checkBaseImage(`node:${major}-bookworm-slim`)).not.toThrow();
    expect(() => checkBaseImage(`node:${major}`)).not.toThrow();
    expect(() => checkBaseImage(`node:${Number(major) + 2}-slim`)).toThrow(/is Node \d+, but the local Node/);
    expect(() => checkBaseImage('alpine:3.20')).toThrow(/base image alpine:3.20 is not understood/);
  });

  it('matches .dockerignore patterns as Docker does (root-anchored, ** for any depth) and refuses exceptions', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dockerignore-'));
    try {
      fs.writeFileSync(path.join(dir, '.dockerignore'), 'dist\n**/node_modules\n*.log\n');
      const ignored = readDockerignore(dir);
      expect(['dist', 'node_modules', 'packages/cli/node_modules', 'a.log'].filter(ignored)).toHaveLength(4);
      expect(['packages/cli/dist', 'src/a.log', 'distx'].filter(ignored)).toEqual([]);
      expect(ignored('dist/api/main.js')).toBe(true);
      fs.writeFileSync(path.join(dir, '.dockerignore'), 'dist\n!dist/keep\n');
      expect(() => readDockerignore(dir)).toThrow(/!dist\/keep is not supported/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("carries out a small Dockerfile: a stage sees only what is copied into it, RUN has the stage's ENV and WORKDIR", async () => {
    const context = fs.mkdtempSync(path.join(os.tmpdir(), 'dockerfile-context-'));
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'dockerfile-out-'));
    try {
      fs.writeFileSync(path.join(context, 'f.txt'), 'from the context\n');
      fs.writeFileSync(path.join(context, 'secret.env'), 'ignored\n');
      fs.writeFileSync(path.join(context, '.dockerignore'), '*.env\n');
      fs.writeFileSync(
        path.join(context, 'Dockerfile'),
        [
          `FROM node:${major} AS one`,
          'WORKDIR /w',
          'ENV GREETING=hello',
          'COPY . ./ctx',
          'RUN echo "$GREETING from $(pwd | sed s,.*/,,)" > out && ls ctx >> out',
          `FROM node:${major}`,
          'COPY --from=one /w/out /o/',
          'USER node',
          'CMD ["cat", "/o/out"]',
        ].join('\n'),
      );
      const build = await buildDockerfile({ context, outDir: path.join(out, '1') });
      expect(fs.readFileSync(path.join(build.workdirOf(build.stages[0]!), 'out'), 'utf8')).toBe('hello from w\nDockerfile\nf.txt\n');
      expect(fs.readdirSync(build.final.root)).toEqual(['o']);
      expect(build.final).toMatchObject({ user: 'node', cmd: ['cat', '/o/out'], env: {} });
      fs.writeFileSync(path.join(context, 'Dockerfile'), `FROM node:${major}\nWORKDIR $HOME\n`);
      await expect(buildDockerfile({ context, outDir: path.join(out, '2') })).rejects.toThrow(/line 2: variables in WORKDIR/);
      fs.writeFileSync(path.join(context, 'Dockerfile'), `FROM node:${major}\nCOPY secret.env ./\n`);
      await expect(buildDockerfile({ context, outDir: path.join(out, '3') })).rejects.toThrow(/COPY source secret.env does not exist/);
    } finally {
      fs.rmSync(context, { recursive: true, force: true });
      fs.rmSync(out, { recursive: true, force: true });
    }
  });

  it("reads the repo's own Dockerfile and .dockerignore", () => {
    const stages = parseDockerfile(fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8')).filter((i) => i.keyword === 'FROM');
    expect(stages.length).toBeGreaterThan(1);
    for (const s of stages) expect(() => checkBaseImage(s.args.split(/\s+/)[0]!)).not.toThrow();
    expect(readDockerignore(projectRoot)('node_modules')).toBe(true);
  });
});
