import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type Router from '@koa/router';
import { startTestStack, type TestStack } from '../support/testStack';
import { ResponseChecker } from '../support/apiDescriptionCheck';
import { openApiPath } from '../../api/openapi/apiDocument';
import { ERROR_CODES } from '../../lib/errors';
import type { AppState } from '../../api/state';

// Contract 19: GET /openapi.json describes every route the API serves, and nothing else.

let stack: TestStack;
let document: {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, unknown>>;
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, any> };
};

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  const res = await stack.http.get('/openapi.json');
  expect(res.status).toBe(200);
  document = res.body;
}, 120_000);

afterAll(() => stack?.stop());

/** `GET /contacts/{id}` for every route the running API has mounted (HEAD comes with GET). */
function mountedRoutes(): string[] {
  const routes = new Set<string>();
  for (const middleware of stack.api.app.middleware as Array<{ router?: Router<AppState> }>) {
    for (const layer of middleware.router?.stack ?? []) {
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        routes.add(`${method} ${openApiPath(String(layer.path))}`);
      }
    }
  }
  return [...routes].sort();
}

function describedRoutes(): string[] {
  return Object.entries(document.paths)
    .flatMap(([template, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${template}`))
    .sort();
}

test('the document is valid OpenAPI 3.1 (checked by an OpenAPI schema validator)', async () => {
  expect(document.openapi).toBe('3.1.0');
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-')), 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(document));
  const validator = require.resolve('@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
  const run = await promisify(execFile)(process.execPath, [validator, file]).catch((err: { stdout: string }) => err);
  expect(JSON.parse(run.stdout)).toEqual({ valid: true });
});

test('it lists every route the API serves, and only those', () => {
  const mounted = mountedRoutes();
  expect(mounted.length).toBeGreaterThan(100);
  expect({ undescribed: mounted.filter((r) => !describedRoutes().includes(r)) }).toEqual({ undescribed: [] });
  expect({ notServed: describedRoutes().filter((r) => !mounted.includes(r)) }).toEqual({ notServed: [] });
});

test('info.version is package.json’s; the security scheme names and error codes are the contract’s', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { version: string };
  expect(document.info.version).toBe(manifest.version);
  expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['projectId', 'publicKey', 'secretKey', 'session']);
  expect(document.components.schemas.Error.properties.error.properties.code.enum).toEqual([...ERROR_CODES]);
  // Contract 2's codes, every one.
  for (const code of ['BAD_REQUEST', 'INVALID_REQUEST_BODY', 'UNAUTHORIZED', 'INVALID_API_KEY', 'BILLING_LIMIT_EXCEEDED', 'FORBIDDEN', 'PROJECT_DISABLED']) {
    expect(ERROR_CODES).toContain(code);
  }
  for (const code of ['RESOURCE_NOT_FOUND', 'CONTACT_NOT_FOUND', 'TEMPLATE_NOT_FOUND', 'CAMPAIGN_NOT_FOUND', 'SEGMENT_NOT_FOUND', 'WORKFLOW_NOT_FOUND']) {
    expect(ERROR_CODES).toContain(code);
  }
  for (const code of [
    'DOMAIN_NOT_FOUND',
    'JOB_NOT_FOUND',
    'CONFLICT',
    'IDEMPOTENCY_KEY_REUSED',
    'VALIDATION_ERROR',
    'RATE_LIMIT_EXCEEDED',
    'INTERNAL_SERVER_ERROR',
  ]) {
    expect(ERROR_CODES).toContain(code);
  }
});

test('a response that does not fit its description is reported (the check the suite’s requests go through)', () => {
  const checker = new ResponseChecker(document as never);
  const good = { success: true, data: { email: 'a@b.co', valid: true, isDisposable: false, isAlias: false, isTypo: false } };
  const complete = {
    ...good,
    data: { ...good.data, isPlusAddressed: false, isPersonalEmail: false, domainExists: true, hasWebsite: true, hasMxRecords: true, reasons: [] },
  };
  expect(checker.problem('POST', '/v1/verify', 200, 'application/json', complete, JSON.stringify(complete))).toBeNull();
  expect(checker.problem('POST', '/v1/verify', 200, 'application/json', good, JSON.stringify(good))).toMatch(/does not fit/);
  expect(checker.problem('POST', '/v1/verify', 200, 'text/html', complete, '<p>')).toMatch(/text\/html/);
  expect(checker.problem('POST', '/v1/verify', 201, 'application/json', complete, JSON.stringify(complete))).toMatch(/does not list/);
  const envelope = { success: false, error: { code: 'NOT_A_CODE', message: 'x', statusCode: 400, requestId: 'r' }, timestamp: 'now' };
  expect(checker.problem('POST', '/v1/verify', 400, 'application/json', envelope, JSON.stringify(envelope))).toMatch(/code/);
});

test('a request to the API goes through the check: a documented route answers within its description', async () => {
  const res = await stack.http.get('/openapi.json');
  expect(res.status).toBe(200);
  const health = await stack.http.get('/health');
  expect(health.status).toBe(200);
});
