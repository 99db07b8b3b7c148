// ESLint's flat config: the recommended correctness rules for every JS module of the package,
// the page, the tests and the scripts. Formatting is Prettier's job (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import globals from 'globals';

export default [
  {
    ignores: [
      'build/',
      'node_modules/',
      'web/lib/wasm/',
      'web/lib/index.cjs',
      'tests/artifacts/',
      'web/examples/*/dist/',
      'web/examples/*/node_modules/',
    ],
  },
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.browser, ...globals.node },
    },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
  // the extension example's scripts also have the extension API (chrome.*)
  { files: ['web/examples/extension/**'], languageOptions: { globals: globals.webextensions } },
];
