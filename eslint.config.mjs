import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import tseslint from 'typescript-eslint';

/**
 * The folders of src/ as layers, bottom first (docs/architecture.md, "Layers"): a folder imports only from
 * itself and the folders before it, so no two folders import each other and a new cycle fails the lint. A lower
 * module that must trigger an upper one owns a port (an abstract class), bound at the root (app.module.ts).
 */
const LAYERS = [
  'common',
  'config',
  'database',
  'audit',
  'identity',
  'provider',
  'sandbox',
  'subscriptions',
  'licensing',
  'notifications',
  'credits',
  'billing',
  'webhook',
  'health',
  'ops',
  'console',
  'cli',
];
// Above them all, the files of src/ itself: the root module that binds the ports, and the starts (the CLI builds
// the application from the root module).

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.data/', 'packages/*/dist/', 'packages/*/node_modules/', 'examples/*/dist/', 'packages/client/src/schema.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', __dirname: 'readonly', require: 'readonly', module: 'writable', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', fetch: 'readonly', URL: 'readonly', AbortSignal: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-require-imports': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/elements': LAYERS.map((layer) => ({ type: layer, pattern: `src/${layer}` })),
      'boundaries/files': [{ category: 'root', pattern: 'src/*.ts' }],
      'import/resolver': { node: { extensions: ['.ts'] } },
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          message: 'src/{{from.type}} may not import src/{{to.type}}: a folder imports only the layers below it (LAYERS in eslint.config.mjs)',
          checkUnknownLocals: true,
          policies: [
            ...LAYERS.map((layer, i) => ({ from: { element: { type: layer } }, allow: { to: { element: { types: { anyOf: LAYERS.slice(0, i) } } } } })),
            { from: { element: { type: 'cli' } }, allow: { to: { file: { categories: 'root' } } } },
            { from: { file: { categories: 'root' } }, allow: [{ to: { element: { types: { anyOf: LAYERS } } } }, { to: { file: { categories: 'root' } } }] },
          ],
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', '**/*.spec.ts'],
    rules: { 'no-restricted-properties': ['error', { object: 'it', property: 'only' }, { object: 'describe', property: 'only' }] },
  },
);
