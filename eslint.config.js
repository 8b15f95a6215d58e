// Lint: typescript-eslint with type information (for no-floating-promises), and the dependency
// rule of ARCHITECTURE.md, written once in LAYERS below: each folder of src/ imports only the
// folders listed for it, so an upward import (or a circle) fails `npm test`.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/**
 * What each room of src/ may import, bottom up: a room imports only rooms listed before it here.
 * `services` is src/services.ts, the start-up the API and the worker share.
 */
export const LAYERS = {
  core: [],
  runtime: ['core'],
  security: ['core', 'runtime'],
  db: ['core', 'runtime', 'security'],
  events: ['core', 'runtime', 'security', 'db'],
  crm: ['core', 'runtime', 'security', 'db', 'events'],
  channels: ['core', 'runtime', 'security', 'db', 'events', 'crm'],
  workflows: ['core'],
  delivery: ['core', 'runtime', 'security', 'db', 'workflows'],
  services: ['core', 'runtime', 'security', 'db', 'delivery'],
  api: ['core', 'runtime', 'security', 'db', 'events', 'crm', 'channels', 'workflows', 'delivery', 'services'],
  worker: ['core', 'runtime', 'security', 'db', 'events', 'crm', 'channels', 'workflows', 'delivery', 'services'],
};
/** The project's tooling beside src/: the service never imports it. */
const TOOLING = ['bench', 'cli', 'dev', 'examples', 'packages', 'test'];

/** An import specifier reaching `room` (a folder of src/, or src/services.ts) from anywhere in src/. */
const reaching = (room) => (room === 'services' ? ['**/services.js'] : [`**/${room}/**`]);

const PG = { name: 'pg', message: 'SQL lives only in src/db/ (one module per table family)' };
const PG_PATTERN = { group: ['pg/*', 'pg-*'], message: PG.message };
/** The I/O core/ and workflows/ may not do. */
const PURE = {
  core: [
    { name: 'undici', message: 'core/ is pure: HTTP belongs in delivery/ or channels/' },
    ...nodeBuiltins.filter((name) => name !== 'node:crypto').map((name) => ({ name, message: 'core/ is pure: no I/O' })),
  ],
  workflows: nodeBuiltins.map((name) => ({ name, message: 'workflow code is deterministic: no Node built-ins (do I/O in an activity)' })),
};

/** One block per room: the rooms above it, the tooling, pg outside db/, and I/O in the pure rooms are refused. */
const layerRules = Object.entries(LAYERS).map(([room, allowed]) => {
  const refused = Object.keys(LAYERS).filter((r) => r !== room && !allowed.includes(r));
  return {
    files: room === 'services' ? ['src/services.ts'] : [`src/${room}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...(room === 'db' ? [] : [PG]), ...(PURE[room] ?? [])],
          patterns: [
            ...(room === 'db' ? [] : [PG_PATTERN]),
            ...refused.map((r) => ({
              group: reaching(r),
              message: `src/${room} imports only ${allowed.join(', ') || 'itself'} (ARCHITECTURE.md)`,
            })),
            { group: TOOLING.map((t) => `**/${t}/**`), message: 'the service never imports the tooling beside src/' },
          ],
        },
      ],
    },
  };
});

export default tseslint.config(
  { ignores: ['node_modules/', '**/dist/', '.data/', '.tools/', 'packages/sdk/src/openapi.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Test code reads untyped JSON answers; production code keeps its types.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    // SQL lives only in src/db/. The tooling beside src/ talks to Postgres where it must (dev's
    // start-up, the admin CLI through src/db); tests, benchmarks and the example receiver (a
    // separate app with its own tables) may use pg directly.
    files: ['**/*.ts'],
    ignores: ['src/**', 'test/**', 'bench/**', 'examples/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [PG], patterns: [PG_PATTERN] }] },
  },
  ...layerRules,
  {
    // The rooms a publish and a delivery run through copy objects with merged() (src/core/merged.ts):
    // Node 20's V8 runs `{ ...a, key }` and `{ ...a, ...b }` ~30x slower than `{ ...a }` and puts
    // the copy, with what it holds, in the old generation.
    files: ['src/db/**/*.ts', 'src/events/**/*.ts', 'src/delivery/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'ObjectExpression > SpreadElement:first-child ~ *',
          message: 'a spread followed by more keys is slow on Node 20 and lands in the old generation: use merged() (src/core/merged.ts)',
        },
      ],
    },
  },
  {
    // Functions stay under ~80 lines (blank lines and comments aside). Tests and benchmarks are
    // exempt, and so is one flat table of routes.
    files: ['**/*.ts'],
    ignores: [
      'test/**',
      'bench/**',
      // A flat table of the local provider's Graph and /_local routes.
      'dev/local-provider/accounts.ts',
    ],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    // The console runs in a browser, as plain ES modules without a build step.
    files: ['console/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        ['window', 'document', 'location', 'sessionStorage', 'fetch', 'URL', 'Node', 'setTimeout', 'clearTimeout', 'setInterval'].map(
          (g) => [g, 'readonly'],
        ),
      ),
    },
  },
  prettier,
);
