/**
 * Starts what every test file shares: a PostgreSQL server (TEST_DATABASE_URL when set, else an
 * embedded one) and a Temporal dev server, and bundles the workflow code once. Each test file
 * then creates its own database and task queue (test/support/testStack.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../launcher/embeddedPostgres';
import { startTemporalDevServer } from '../../launcher/temporalDevServer';
import { findFreePort } from '../../lib/freePort';
import { buildWorkflowBundle } from '../../worker/workflowBundle';
import { startTemporalCluster } from '../../launcher/temporalTestCluster';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalBinary } = require('../../scripts/temporal-binary.cjs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script (it runs before node_modules exists), without types to import
const { ensureTemporalServer } = require('../../scripts/temporal-server-binary.cjs');

export default async function globalSetup(): Promise<void> {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-test-'));
  // As root, the embedded PostgreSQL runs as the postgres user, which must be able to enter here.
  fs.chmodSync(runDir, 0o755);
  const stops: Array<() => Promise<void>> = [];

  let pgServerUrl = process.env.TEST_DATABASE_URL;
  if (!pgServerUrl) {
    const pg = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'postgres'), port: await findFreePort() });
    pgServerUrl = pg.url;
    stops.push(pg.stop);
  }

  // MAILROOM_TEST_TEMPORAL=cluster (npm run test:cluster): a real Temporal server on PostgreSQL
  // where nobody registered Mailroom's search attributes; otherwise the CLI's dev server.
  const temporal =
    process.env.MAILROOM_TEST_TEMPORAL === 'cluster'
      ? await startTemporalCluster({
          paths: ensureTemporalServer(),
          postgresUrl: pgServerUrl,
          databasePrefix: `mailroom_temporal_${process.pid}`,
          dir: path.join(runDir, 'temporal-cluster'),
          namespace: 'default',
        })
      : await startTemporalDevServer({
          binaryPath: ensureTemporalBinary(),
          port: 0,
          uiPort: false,
          namespace: 'default',
          logFile: path.join(runDir, 'temporal.log'),
        });
  stops.unshift(temporal.stop);

  const bundlePath = path.join(runDir, 'workflow-bundle.js');
  fs.writeFileSync(bundlePath, (await buildWorkflowBundle()).code);

  // No test process listens on the fixed SMTP ports (2500, 2587) unless it asks: the `npm start`
  // and api/main.ts children of parallel test files would fight over them.
  process.env.INBOUND_SMTP_PORT = '0';
  process.env.SUBMISSION_SMTP_PORT = '0';
  process.env.MAILROOM_TEST_PG_SERVER_URL = pgServerUrl;
  process.env.MAILROOM_TEST_TEMPORAL_ADDRESS = temporal.address;
  process.env.MAILROOM_WORKFLOW_BUNDLE = bundlePath;
  process.env.MAILROOM_TEST_RUN_DIR = runDir;
  (globalThis as { __mailroomStops?: Array<() => Promise<void>> }).__mailroomStops = stops;
}
