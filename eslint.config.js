// Lint: typescript-eslint with type information (for no-floating-promises), and the Temporal
// samples' rule that workflow code imports no Node built-ins (it must stay deterministic).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

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
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [...builtinModules, ...builtinModules.map((m) => `node:${m}`)].map((name) => ({
            name,
            message: 'workflow code is deterministic: no Node built-ins (do I/O in an activity)',
          })),
        },
      ],
    },
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
