'use strict';
/**
 * Locates (and on first use builds) a real Temporal server for `npm run test:cluster`: the
 * server (go.temporal.io/server/cmd/server), its SQL schema tool (cmd/tools/sql) and the
 * PostgreSQL schema files, built from the Go module proxy into
 * ~/.cache/mailroom/bin/temporal-server-<version>/ (or $MAILROOM_TOOLS_DIR).
 *
 * Each binary goes through the same build path as the Temporal CLI (scripts/temporal-binary.cjs:
 * lock, staging directory, progress lines, retries). v1.32.1 is the newest release this
 * machine's Go (1.26.8) builds: v1.32.2 needs Go 1.26.10.
 */
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { ensureGoBinary, toolsDir } = require('./temporal-binary.cjs');

const TEMPORAL_SERVER_VERSION = 'v1.32.1';
const SERVER_MODULE = 'go.temporal.io/server';

/** Where the server, the SQL tool and the schema files live once built. */
function temporalServerPaths() {
  const dir = path.join(toolsDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  return {
    dir,
    // go install names each binary after its package directory.
    server: path.join(dir, 'server'),
    sqlTool: path.join(dir, 'sql'),
    schemaDir: path.join(dir, 'schema-postgresql-v12'),
    version: TEMPORAL_SERVER_VERSION,
  };
}

/**
 * The schema files ship in the server's module source, which `go install` left in the module
 * cache: copied next to the binaries (staged, then renamed) so later runs need no Go at all.
 */
function ensureSchemaFiles(paths) {
  if (fs.existsSync(paths.schemaDir)) return;
  const modCache = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  const source = path.join(modCache, `${SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`, 'schema', 'postgresql', 'v12');
  const staging = `${paths.schemaDir}.staging-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.cpSync(source, staging, { recursive: true });
  try {
    fs.renameSync(staging, paths.schemaDir);
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    if (!fs.existsSync(paths.schemaDir)) throw err; // else another process copied it first
  }
}

/**
 * Makes sure the server, SQL tool and schema exist, building them with `go install` when
 * missing (about 10 to 60 minutes on two cores, once). Synchronous; returns temporalServerPaths().
 */
function ensureTemporalServer() {
  const paths = temporalServerPaths();
  ensureGoBinary({
    binary: paths.server,
    target: `${SERVER_MODULE}/cmd/server@${TEMPORAL_SERVER_VERSION}`,
    label: `the Temporal server ${TEMPORAL_SERVER_VERSION}`,
  });
  ensureGoBinary({
    binary: paths.sqlTool,
    target: `${SERVER_MODULE}/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
    label: `the Temporal SQL tool ${TEMPORAL_SERVER_VERSION}`,
  });
  ensureSchemaFiles(paths);
  return paths;
}

module.exports = { ensureTemporalServer, temporalServerPaths, TEMPORAL_SERVER_VERSION };

if (require.main === module) {
  const paths = ensureTemporalServer();
  process.stdout.write(`${JSON.stringify(paths)}\n`);
}
