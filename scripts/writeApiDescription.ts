/**
 * `npm run openapi`: writes the API description (the document GET /openapi.json serves) to
 * client/openapi.json, and the TypeScript types of the typed client generated from it
 * (openapi-typescript) to client/apiTypes.ts. With `--check` it writes nothing and exits 1 when
 * either file is out of date: test/platform/apiClient.test.ts runs that, so a response that
 * changes shape breaks the build of every user of the client until the files are regenerated.
 *
 * The routers are built as the API builds them; nothing here serves or calls a route, so every
 * dependency but the configuration is a placeholder that refuses to be used.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describedApi } from '../api/app';
import type { ApiDeps } from '../api/state';
import { loadConfig } from '../lib/config';
import { projectRoot } from '../lib/codeLocation';
import { apiTypesSource } from './apiTypes';

const unavailable = (name: string) =>
  new Proxy(
    {},
    {
      get() {
        throw new Error(`${name} is not available while only describing the API`);
      },
    },
  );

function currentApiDocument(): object {
  const deps = {
    // The defaults, not this shell's settings: the committed files must not depend on who ran the script.
    config: loadConfig({}),
    orm: unavailable('orm'),
    temporal: unavailable('temporal'),
    logger: unavailable('logger'),
    eventTriggers: unavailable('eventTriggers'),
    contactWrites: unavailable('contactWrites'),
    apiKeys: unavailable('apiKeys'),
    senderDomains: unavailable('senderDomains'),
    capUsage: unavailable('capUsage'),
    deliveries: unavailable('deliveries'),
    objectStore: unavailable('objectStore'),
    inbound: unavailable('inbound'),
  } as ApiDeps;
  return describedApi(deps).document;
}

const CLIENT_DIR = path.join(projectRoot, 'client');

async function main() {
  const document = currentApiDocument();
  const files = {
    'openapi.json': `${JSON.stringify(document, null, 2)}\n`,
    'apiTypes.ts': await apiTypesSource(document),
  };
  if (process.argv.includes('--check')) {
    const stale = Object.entries(files).filter(([name, text]) => readOrEmpty(path.join(CLIENT_DIR, name)) !== text);
    for (const [name] of stale) process.stderr.write(`client/${name} is out of date: run \`npm run openapi\`\n`);
    process.exit(stale.length ? 1 : 0);
  }
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(CLIENT_DIR, name), text);
  process.stdout.write(`Wrote client/openapi.json and client/apiTypes.ts\n`);
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
