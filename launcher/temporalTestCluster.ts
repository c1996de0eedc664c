/**
 * A real single-node Temporal server (go.temporal.io/server, built by
 * scripts/temporal-server-binary.cjs) on PostgreSQL, as a self-hosted cluster runs: its two
 * databases are created and brought to the release's schema with temporal-sql-tool, the server
 * starts from a written config, and only the namespace is created: nobody registers Mailroom's
 * search attributes, which Mailroom must do itself. Used by `npm run test:cluster`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import net from 'node:net';
import { stopChildProcess } from './childProcess';
import { projectRoot } from '../lib/codeLocation';

const run = promisify(execFile);
const READY_TIMEOUT_MS = 180_000;

export interface TemporalClusterOptions {
  paths: { server: string; sqlTool: string; schemaDir: string };
  /** postgres://user@host:port (a server where we may create databases). */
  postgresUrl: string;
  /** Prefix of the two databases (`<prefix>` and `<prefix>_visibility`); dropped and recreated. */
  databasePrefix: string;
  /** Working directory for the config file and the log. */
  dir: string;
  namespace: string;
}

export interface TemporalCluster {
  address: string;
  stop: () => Promise<void>;
}

function sqlToolArgs(opts: TemporalClusterOptions, database: string): string[] {
  const url = new URL(opts.postgresUrl);
  const base = [
    '--plugin',
    'postgres12',
    '--ep',
    url.hostname,
    '-p',
    url.port || '5432',
    '-u',
    decodeURIComponent(url.username || 'postgres'),
    '--db',
    database,
  ];
  if (url.password) base.push('--pw', decodeURIComponent(url.password));
  return base;
}

async function dropDatabase(opts: TemporalClusterOptions, database: string): Promise<void> {
  await run(opts.paths.sqlTool, [...sqlToolArgs(opts, database), 'drop', '--force']).catch(() => undefined);
}

async function setupSchema(opts: TemporalClusterOptions, database: string, versionedDir: string): Promise<void> {
  const base = sqlToolArgs(opts, database);
  await dropDatabase(opts, database);
  await run(opts.paths.sqlTool, [...base, 'create']);
  await run(opts.paths.sqlTool, [...base, 'setup-schema', '-v', '0.0']);
  await run(opts.paths.sqlTool, [...base, 'update-schema', '-d', versionedDir]);
}

function configYaml(opts: TemporalClusterOptions, ports: number[]): string {
  const url = new URL(opts.postgresUrl);
  const [frontend, frontendHttp, frontendMember, history, historyMember, matching, matchingMember, worker, workerMember] = ports;
  const store = (database: string, maxConns: number) => `
      sql:
        pluginName: postgres12
        databaseName: ${database}
        connectAddr: "${url.hostname}:${url.port || '5432'}"
        connectProtocol: tcp
        user: "${decodeURIComponent(url.username || 'postgres')}"
        password: "${decodeURIComponent(url.password)}"
        maxConns: ${maxConns}
        maxIdleConns: ${maxConns}
        maxConnLifetime: 1h`;
  const service = (grpc: number, member: number, extra = '') => `
    rpc:
      grpcPort: ${grpc}
      membershipPort: ${member}
      bindOnLocalHost: true${extra}`;
  return `log:
  stdout: true
  level: warn
  format: json
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: 4
  datastores:
    default:${store(opts.databasePrefix, 20)}
    visibility:${store(`${opts.databasePrefix}_visibility`, 5)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
  frontend:${service(frontend, frontendMember, `\n      httpPort: ${frontendHttp}`)}
  history:${service(history, historyMember)}
  matching:${service(matching, matchingMember)}
  worker:${service(worker, workerMember)}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:${frontend}"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "${path.join(projectRoot, 'deploy', 'temporal', 'dynamicconfig', 'development-sql.yaml')}"
  pollInterval: 10s
`;
}

/**
 * A free loopback port under 32768: the server stores membership ports in a PostgreSQL smallint,
 * so the kernel's ephemeral ports (32768 and up) make it exit at start.
 */
async function freePortBelowSmallintLimit(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sets up the schemas, starts the server, waits until it answers and creates `namespace`. */
export async function startTemporalCluster(opts: TemporalClusterOptions): Promise<TemporalCluster> {
  fs.mkdirSync(opts.dir, { recursive: true });
  await setupSchema(opts, opts.databasePrefix, path.join(opts.paths.schemaDir, 'temporal', 'versioned'));
  await setupSchema(opts, `${opts.databasePrefix}_visibility`, path.join(opts.paths.schemaDir, 'visibility', 'versioned'));

  const ports: number[] = [];
  while (ports.length < 9) {
    const port = await freePortBelowSmallintLimit();
    if (!ports.includes(port)) ports.push(port);
  }
  const configFile = path.join(opts.dir, 'temporal-server.yaml');
  fs.writeFileSync(configFile, configYaml(opts, ports));
  const logFd = fs.openSync(path.join(opts.dir, 'temporal-server.log'), 'a');
  const child = spawn(opts.paths.server, ['--config-file', configFile, '--allow-no-auth', 'start'], { stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  child.on('error', () => undefined);
  const address = `127.0.0.1:${ports[0]}`;
  const stop = async () => {
    await stopChildProcess(child, { graceMs: 10_000 });
    await dropDatabase(opts, opts.databasePrefix);
    await dropDatabase(opts, `${opts.databasePrefix}_visibility`);
  };

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the Temporal server exited (${child.exitCode}); see ${opts.dir}/temporal-server.log`);
      let connection: Connection | undefined;
      try {
        connection = await Connection.connect({ address, connectTimeout: 2000, interceptors: [] });
        await connection.workflowService.getSystemInfo({});
        try {
          await connection.workflowService.describeNamespace({ namespace: opts.namespace });
          return { address, stop };
        } catch {
          await connection.workflowService
            .registerNamespace({ namespace: opts.namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
            .catch(() => undefined);
        }
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`the Temporal server at ${address} did not answer within ${READY_TIMEOUT_MS / 1000} s: ${(err as Error).message}`);
      } finally {
        await connection?.close().catch(() => undefined);
      }
      await delay(500);
    }
  } catch (err) {
    await stop();
    throw err;
  }
}
