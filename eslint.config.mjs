// @ts-check
/**
 * ESLint for every .ts file (type-checked through tsconfig.json; the dashboard's .ts and .tsx
 * through web/tsconfig.json) and the plain .cjs/.js/.mjs scripts. `npm run lint` runs it with Prettier's check; `npm test` runs that before jest.
 * The rule choices and their reasons are in docs/development.md ("Linting and formatting").
 */
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import boundaries from 'eslint-plugin-boundaries';
import reactHooks from 'eslint-plugin-react-hooks';
import { builtinModules } from 'node:module';

/**
 * Which folders each folder may import from (besides itself and packages). Read top to bottom:
 * entry points and adapters first, then services, then what services use, then lib, then shared.
 */
const LAYERS = {
  scripts: ['api', 'activities', 'workflows', 'worker', 'services', 'db', 'mail', 'temporal', 'launcher', 'lib', 'test', 'client', 'shared'],
  // Tests may import the dashboard's pure modules (web/src/**/*.ts without JSX or DOM) to unit-test them.
  test: ['api', 'activities', 'workflows', 'worker', 'services', 'db', 'mail', 'temporal', 'launcher', 'lib', 'scripts', 'client', 'shared', 'web'],
  bench: ['api', 'activities', 'workflows', 'worker', 'services', 'db', 'mail', 'temporal', 'launcher', 'lib', 'test', 'scripts', 'client', 'shared'],
  // The dashboard (a browser app, built by Vite): it talks to the API only through the typed client,
  // and validates forms with the API's own request schemas (shared/).
  web: ['client', 'shared'],
  // The typed client (generated from the API description) stands alone: the dashboard and users import it.
  client: [],
  launcher: ['db', 'temporal', 'lib', 'shared'],
  worker: ['activities', 'workflows', 'services', 'db', 'mail', 'temporal', 'lib', 'shared'],
  api: ['services', 'db', 'mail', 'temporal', 'lib', 'shared'],
  activities: ['services', 'db', 'mail', 'temporal', 'lib', 'shared'],
  workflows: ['temporal'],
  services: ['db', 'mail', 'temporal', 'lib', 'shared'],
  db: ['lib', 'shared'],
  mail: ['db', 'lib', 'shared'],
  temporal: ['lib', 'shared'],
  lib: ['shared'],
  // What the browser and the server both use (request schemas, field rules, constants): zod and nothing else.
  shared: [],
};

export default tseslint.config(
  {
    ignores: ['node_modules/', 'coverage/', 'data/', '.tools/', 'dist/', 'test-results/', 'client/apiTypes.ts'],
  },
  {
    // A disable comment that no longer disables anything is an error: each one says why it is there.
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },

  // TypeScript: the type-checked recommended rules, with the type information of tsconfig.json
  // (web/tsconfig.json for the dashboard: the project service takes each file's nearest one).
  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // The promise rules: an unawaited promise in an activity or a route is a lost write or an
      // unhandled rejection; a try/catch around `return promise` does not catch its rejection.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // Passing on a caught error as it came is fine; rejecting with a string or a plain object is not.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // A switch over a union handles every member or says `default:` (many here do, on purpose).
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // Off here, on below for the server code: JSON response bodies in test/ and bench/ are
      // `any`, and the family made about 3,100 reports of them there, none a bug.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Off: an async function without `await` is how an interface that returns a promise
      // (activities, repositories, handlers) is implemented synchronously.
      '@typescript-eslint/require-await': 'off',
      // Off: every control character in a regular expression here is deliberate (refusing CR, LF
      // and NUL in headers, names and addresses).
      'no-control-regex': 'off',
    },
  },

  // No `any` flows unchecked through the server code: what the database returns is typed at the
  // db/ boundary (db/sql/rows.ts), zod-parsed values are typed, and other outside JSON is `unknown`
  // until narrowed. The dashboard's answers are typed by the client generated from the API description.
  {
    files: ['{services,activities,workflows}/**/*.ts', 'web/**/*.{ts,tsx}'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'error',
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
    },
  },

  // Server code logs through its JSON logger (pino), never the console.
  {
    files: ['{api,activities,services,db,lib,mail,temporal,launcher,worker,workflows}/**/*.ts', 'test/**/*.ts'],
    rules: { 'no-console': 'error' },
  },

  // The dashboard runs in a browser, and shared/ is bundled into it: no Node modules (a bundle would
  // carry a shim or fail), nothing on the console.
  {
    files: ['web/**/*.{ts,tsx}', 'shared/**/*.ts'],
    rules: {
      'no-console': 'error',
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['node:*', ...builtinModules], message: 'The dashboard runs in a browser: no Node modules.' }] },
      ],
    },
  },
  // React's rules of hooks (and the React Compiler's checks of what a component may do).
  {
    files: ['web/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.flat.recommended.rules,
      'react-hooks/exhaustive-deps': 'error',
    },
  },

  // The layers (ARCHITECTURE.md): routes and activities call services; services call db/, mail/
  // and temporal/; lib/ is below everything; nothing imports up (import cycles: `madge` in npm run lint). Workflow code is bundled for
  // Temporal's deterministic sandbox: it imports values only from workflows/ and temporal/ (and
  // packages), and from the rest of the code types only (an activity's signature, say).
  {
    files: ['**/*.ts', '**/*.tsx'],
    plugins: { boundaries },
    settings: {
      'import/resolver': { node: { extensions: ['.ts', '.tsx', '.js'] } },
      'boundaries/elements': Object.keys(LAYERS).map((dir) => ({ type: dir, pattern: `${dir}/**`, partialMatch: false })),
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          message: 'This import runs up a layer or across to a folder it may not use: see the layers in ARCHITECTURE.md',
          policies: [
            ...Object.entries(LAYERS).map(([from, to]) => ({
              from: { element: { type: from } },
              allow: { to: { element: { types: { anyOf: [from, ...to] } } } },
            })),
            // Workflow code may name any type (an activity's signature, say); a starter names a workflow's type only.
            { from: { element: { type: 'workflows' } }, allow: { to: { element: { type: '*' } }, dependency: { kind: 'type' } } },
            {
              from: { element: { types: { anyOf: ['api', 'services', 'temporal'] } } },
              allow: { to: { element: { type: 'workflows' } }, dependency: { kind: 'type' } },
            },
          ],
        },
      ],
    },
  },

  // SQL lives in db/ (ARCHITECTURE.md): outside it, no statement is sent and no query built. A
  // call of `.execute(` is taken as a statement whatever it is called on, except on `this` (a
  // class's own method) and Temporal's `client.workflow.execute` (start a workflow, await its
  // result). Not checked: test/, which reads and writes the database directly to set up states
  // and assert on them; bench/, which seeds data and measures statements; scripts/, whose history
  // recorder drives a stack the way a test does.
  {
    files: ['**/*.ts'],
    ignores: ['db/**', 'test/**', 'bench/**', 'scripts/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          "CallExpression[callee.type='MemberExpression'][callee.property.name='execute']:not([callee.object.type='ThisExpression']):not([callee.object.property.name='workflow'])",
          'CallExpression[callee.property.name=/^(getConnection|getKnex|createQueryBuilder)$/]',
          'CallExpression[callee.name=/^(getConnection|getKnex|createQueryBuilder)$/]',
        ].map((selector) => ({ selector, message: 'SQL lives in db/: add a repository function there (see ARCHITECTURE.md) and call it here.' })),
      ],
    },
  },

  // Tests: the jest rules that catch tests which assert nothing, never run, or assert only sometimes.
  {
    files: ['test/**/*.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      // Helpers named expect* (expectRefused, expectTooDeep, ...) assert.
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*'] }],
      'jest/no-disabled-tests': 'error',
      'jest/no-focused-tests': 'error',
      'jest/valid-expect': 'error',
      'jest/no-conditional-expect': 'error',
    },
  },

  // The plain scripts (CommonJS, no dependencies) and the config files: ESLint's recommended rules only.
  {
    files: ['**/*.cjs', '**/*.js'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
  },
  {
    files: ['**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'module', globals: globals.node },
  },

  // Last: turns off the stylistic rules that Prettier decides.
  prettier,
);
