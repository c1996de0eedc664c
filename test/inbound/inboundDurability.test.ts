import nodemailer from 'nodemailer';
import { startTestStack, startStackWorker, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import type { ChildService } from '../support/processes';
import { eventually } from '../support/eventually';
import { projectWithVerifiedDomain } from '../support/sendingProject';

/**
 * Received mail is safe from the 250 on: processing runs in real worker processes killed with
 * SIGKILL in the middle of it, and every accepted message ends up recorded once.
 */
const WORKER_START_MS = 120_000;
const MESSAGES = 200;

let dns: TestDnsServer;
let stack: TestStack;
const workers: ChildService[] = [];

beforeAll(async () => {
  dns = await startTestDnsServer();
  stack = await startTestStack({ worker: false, inboundSmtp: true, env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' } });
}, 180_000);

afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await stack?.stop();
  await dns?.close();
});

async function startWorker(): Promise<ChildService> {
  const worker = await startStackWorker(stack, { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500' }, WORKER_START_MS);
  workers.push(worker);
  return worker;
}

async function counts(projectId: string) {
  const [row] = await stack.orm.em.fork().execute(
    `select (select count(*)::int from emails where project_id = ? and source = 'INBOUND') as emails,
            (select count(distinct inbound_message_id)::int from emails where project_id = ? and source = 'INBOUND') as messages,
            (select count(*)::int from events where project_id = ? and name = 'email.received') as events,
            (select count(*)::int from inbound_messages where status = 'RECEIVED') as unprocessed,
            (select used::int from billing_usage where project_id = ? and category = 'inbound') as counted`,
    [projectId, projectId, projectId, projectId],
  );
  return row as { emails: number; messages: number; events: number; unprocessed: number; counted: number | null };
}

it('records every accepted message once though the worker is SIGKILLed while processing them', async () => {
  const { project, domain } = await projectWithVerifiedDomain(stack, dns);
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port: stack.api.smtp.inbound!.port,
    secure: false,
    ignoreTLS: true,
    pool: true,
    maxConnections: 5,
  });
  try {
    // No worker runs yet: all of them are accepted and none processed.
    const sends = Array.from({ length: MESSAGES }, (_, i) =>
      transport.sendMail({ from: `sender-${i}@sender.test`, to: `inbox+${i}@${domain}`, subject: `Message ${i}`, text: `Body ${i}` }),
    );
    for (const info of await Promise.all(sends)) expect(info.response).toMatch(/^250 /);
  } finally {
    transport.close();
  }
  expect(await counts(project.id)).toMatchObject({ emails: 0, unprocessed: MESSAGES });

  const first = await startWorker();
  await eventually(async () => expect((await counts(project.id)).emails).toBeGreaterThan(0), 120_000, 20);
  first.kill('SIGKILL');
  await first.exited;
  const atKill = await counts(project.id);

  await startWorker();
  const done = await eventually(
    async () => {
      const now = await counts(project.id);
      expect(now.unprocessed).toBe(0);
      expect(now.emails).toBe(MESSAGES);
      return now;
    },
    180_000,
    500,
  );
  expect(done).toEqual({ emails: MESSAGES, messages: MESSAGES, events: MESSAGES, unprocessed: 0, counted: MESSAGES });
  // Whether the kill caught processing half way is timing; that it changed nothing is the point.
  expect(atKill.emails).toBeLessThanOrEqual(MESSAGES);
}, 420_000);
