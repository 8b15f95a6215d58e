// Lint: typescript-eslint with type information (for no-floating-promises), and the import
// boundaries of ARCHITECTURE.md: workflows deterministic, core pure, SQL only in db/.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];
const PG = { name: 'pg', message: 'SQL lives only in db/ (one module per table family)' };
const PG_PATTERN = { group: ['pg/*', 'pg-*'], message: PG.message };
/** The service's top-level folders. */
const FOLDERS = [
  'api',
  'bench',
  'channels',
  'cli',
  'core',
  'crm',
  'db',
  'delivery',
  'dev',
  'events',
  'examples',
  'runtime',
  'security',
  'test',
  'worker',
  'workflows',
];
/** Import patterns reaching any top-level folder but the allowed ones. */
const outside = (...allowed) => FOLDERS.filter((f) => !allowed.includes(f)).map((f) => `**/${f}/**`);

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
    // SQL lives only in db/: nothing else talks to Postgres. Tests, benchmarks and the example
    // receiver (a separate app with its own tables) are the listed exceptions.
    files: ['**/*.ts'],
    ignores: ['src/db/**', 'test/**', 'bench/**', 'examples/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [PG], patterns: [PG_PATTERN] }] },
  },
  {
    // core/ is pure: no I/O (no Node built-ins but hashing, no pg, no undici) and nothing above it.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            PG,
            { name: 'undici', message: 'core/ is pure: HTTP belongs in delivery/ or provider/' },
            ...nodeBuiltins.filter((name) => name !== 'node:crypto').map((name) => ({ name, message: 'core/ is pure: no I/O' })),
          ],
          patterns: [PG_PATTERN, { group: outside('core'), message: 'core/ imports only core/' }],
        },
      ],
    },
  },
  {
    // Workflow code is deterministic (Temporal samples' rule): no Node built-ins, and it imports
    // only core/ and its own contract (types of the activities are erased, so they may be named).
    files: ['src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'workflow code is deterministic: no Node built-ins (do I/O in an activity)',
          })),
          patterns: [
            { group: outside('core', 'workflows'), allowTypeImports: true, message: 'workflows/ import only core/ and their contract' },
          ],
        },
      ],
    },
  },
  {
    // Functions stay under ~80 lines (blank lines and comments aside). Tests and benchmarks are
    // exempt; so are the listed files: flat tables of routes or commands, or files another change
    // is reshaping (delivery-session.ts, workflows/, dev/start.ts, listen.ts).
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
