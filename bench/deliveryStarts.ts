/**
 * What one delivery workflow start costs, apart from everything else a send does: the starting
 * process's CPU (the API's, in production) and the Temporal dev server's, per start, with the
 * start options the API's delivery scheduler sends (temporal/deliveryWorkflowStart.ts: the
 * ProjectId and EmailIds search attributes). No worker polls the task queue, so only the start
 * itself is counted; the workflow's task and completion cost the server more (bench:send).
 *
 *   node --import tsx bench/deliveryStarts.ts [starts=300] [concurrency=4] [emailsPerWorkflow=18]
 *
 * Each run starts its own dev server and measures two clients one after the other: the gRPC
 * client of @temporalio/client that the API uses (@grpc/grpc-js) and the SDK's NativeConnection
 * (the Rust client the worker uses), which @temporalio/client can also run on.
 */
import crypto from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { startTemporalDevServer } from '../launcher/temporalDevServer';
import { deliveryWorkflowStart } from '../temporal/deliveryWorkflowStart';
import { printFigures } from './support/benchStack';
import { processCpuMs } from './support/processCpu';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalBinary } = require('../scripts/temporal-binary.cjs');

async function measure(
  kind: string,
  connection: Connection | NativeConnection,
  serverPid: number,
  options: { starts: number; concurrency: number; emails: number },
): Promise<Record<string, string | number>> {
  const client = new Client({ connection, namespace: 'default' });
  const startOne = async () => {
    const emailIds = Array.from({ length: options.emails }, () => crypto.randomUUID());
    const start = deliveryWorkflowStart({
      taskQueue: `bench-${kind}`,
      workflowId: `deliver-${emailIds[0]}`,
      projectId: crypto.randomUUID(),
      emailIds,
      retryDelaysSeconds: [60, 300],
    });
    await connection.withDeadline(Date.now() + 10_000, () => client.workflow.start('emailDeliveryWorkflow', start));
  };
  for (let i = 0; i < 50; i++) await startOne(); // warm-up: JIT, the channel, the server's caches
  const server0 = processCpuMs(serverPid);
  const client0 = process.cpuUsage();
  const began = Date.now();
  let left = options.starts;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (left-- > 0) await startOne();
    }),
  );
  const seconds = (Date.now() - began) / 1000;
  const client1 = process.cpuUsage(client0);
  return {
    [`${kind}: starts/s`]: Math.round(options.starts / seconds),
    [`${kind}: starting process CPU per start (ms)`]: ((client1.user + client1.system) / 1000 / options.starts).toFixed(2),
    [`${kind}: Temporal dev server CPU per start (ms)`]: ((processCpuMs(serverPid) - server0) / options.starts).toFixed(2),
  };
}

async function main() {
  const options = { starts: Number(process.argv[2] ?? 300), concurrency: Number(process.argv[3] ?? 4), emails: Number(process.argv[4] ?? 18) };
  const server = await startTemporalDevServer({ binaryPath: ensureTemporalBinary(), port: 0, uiPort: false, namespace: 'default' });
  try {
    const grpc = await Connection.connect({ address: server.address });
    const grpcFigures = await measure('@grpc/grpc-js client (the API)', grpc, server.pid, options);
    await grpc.close();
    const native = await NativeConnection.connect({ address: server.address });
    const nativeFigures = await measure('NativeConnection (Rust)', native, server.pid, options);
    await native.close();
    printFigures(`delivery workflow starts, ${options.emails} email ids each, ${options.concurrency} at a time, no worker`, {
      ...grpcFigures,
      ...nativeFigures,
    });
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
