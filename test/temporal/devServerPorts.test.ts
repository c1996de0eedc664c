/**
 * The Temporal dev server's start when a port is taken. Besides the ports it is given, the server
 * picks ports for its own history, matching and worker services; under a loaded test run another
 * process took one between its pick and its bind, the server died with a nil-pointer panic whose
 * stack pushed the reason out of the kept output, and `npm start` stopped ("startup failed").
 * A port the server picked itself is now retried; a port the caller gave fails at once, naming it.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { portsInUseAtStart, startTemporalDevServer } from '../../launcher/temporalDevServer';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a plain CommonJS script, without types to import
const { ensureTemporalBinary } = require('../../scripts/temporal-binary.cjs');

const binaryPath: string = ensureTemporalBinary();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-devserver-ports-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * A TCP listener on a free loopback port, holding it for the test. It takes connections and never
 * answers, as a process that is not a Temporal server would; `connections()` counts those open.
 */
async function occupiedPort(): Promise<{ port: number; connections(): number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => sockets.size,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The real CLI behind a wrapper script (`body` runs first; `runs` gets a line per start). */
function wrappedCli(name: string, body: string[]): { path: string; runs: string } {
  const runs = path.join(dir, `${name}.runs`);
  const wrapper = path.join(dir, name);
  fs.writeFileSync(wrapper, ['#!/bin/sh', `echo run >> '${runs}'`, ...body, `exec '${binaryPath}' "$@"`, ''].join('\n'), { mode: 0o755 });
  return { path: wrapper, runs };
}

it('reads the ports a start could not bind from the server output', () => {
  // The first line the CLI (v1.5.1) prints when a service's gRPC port is taken, before its panic.
  const line =
    '{"time":"2026-11-27T13:47:15Z","level":"ERROR","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:47121: bind: address already in use","service":"history","address":"127.0.0.1:47121"}';
  expect(portsInUseAtStart(`${line}\npanic: runtime error: invalid memory address or nil pointer dereference\n`)).toEqual([47121]);
  expect(portsInUseAtStart('{"msg":"namespace default registered"}')).toEqual([]);
});

it('fails at once when the frontend port it was given is taken, naming the port and the reason', async () => {
  const taken = await occupiedPort();
  // A second's delay before the CLI runs: the start's readiness probe connects to the listener on
  // the port (which never answers) before the server dies of finding it taken.
  const cli = wrappedCli('temporal-slow-start', ['sleep 1']);
  try {
    const started = startTemporalDevServer({ binaryPath: cli.path, port: taken.port, namespace: 'default' });
    await expect(started).rejects.toThrow(`listen tcp 127.0.0.1:${taken.port}: bind: address already in use`);
    expect(fs.readFileSync(cli.runs, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(taken.connections()).toBeGreaterThan(0);
  } finally {
    // Dropped here: @temporalio/client's Connection leaves the socket of a connect that timed out
    // open (1.24.0), and a listener's close waits for its connections.
    await taken.close();
  }
  // Past the start's own 60 s readiness limit, so a server that neither dies nor answers fails with its output.
}, 90_000);

it('tries again when a port the server picked for itself was taken, and starts', async () => {
  // The real CLI behind a wrapper whose first run dies as the CLI does when another process took
  // one of its own service ports between its pick and its bind (that race cannot be provoked on demand).
  const cli = wrappedCli('temporal-first-start-fails', [
    `if [ "$(wc -l < '${path.join(dir, 'temporal-first-start-fails.runs')}')" -eq 1 ]; then`,
    `  echo '{"level":"ERROR","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:1: bind: address already in use","service":"matching"}' >&2`,
    '  echo "panic: runtime error: invalid memory address or nil pointer dereference" >&2',
    '  exit 2',
    'fi',
  ]);
  const server = await startTemporalDevServer({ binaryPath: cli.path, namespace: 'default' });
  try {
    expect(fs.readFileSync(cli.runs, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
  } finally {
    await server.stop();
  }
}, 90_000);
