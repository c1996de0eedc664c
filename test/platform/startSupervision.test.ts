import net from 'node:net';
import { findFreePort } from '../../lib/freePort';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { uploadFile } from '../support/multipart';
import { eventually } from '../support/eventually';
import { startStack, stopStack, type StartedStack } from '../support/startCommand';

/** `npm start` against the test run's PostgreSQL database and Temporal server, as an operator with their own runs it. */
describe('the start command supervising the API and the worker', () => {
  let databaseUrl: string;
  const stacks: StartedStack[] = [];
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });
  afterAll(async () => {
    stacks.forEach(stopStack);
    await dropTestDatabase(databaseUrl);
  });

  it('says when it is ready, restarts a worker killed with SIGKILL, and imports complete', async () => {
    const port = await findFreePort();
    const stack = startStack({ ...testEnv(), DATABASE_URL: databaseUrl, PORT: String(port), PUBLIC_URL: `http://localhost:${port}` });
    stacks.push(stack);

    await eventually(() => stack.text.some((l) => l.startsWith('Mailroom is ready: ')), 90_000, 100).catch(() => {
      throw new Error(`never ready; last output:\n${stack.text.slice(-40).join('\n')}`);
    });
    const ready = stack.text.find((l) => l.startsWith('Mailroom is ready: '))!;
    expect(ready).toContain(`API http://localhost:${port}`);
    expect(ready).toContain('README "Quick start"');

    const api = await stack.waitFor((l) => l.msg?.startsWith('api started (pid'));
    const worker = await stack.waitFor((l) => l.msg?.startsWith('worker started (pid'));
    process.kill(worker.childPid, 'SIGKILL');

    const crash = await stack.waitFor((l) => l.process === 'worker' && /exited unexpectedly/.test(l.msg ?? ''));
    expect(crash).toMatchObject({ signal: 'SIGKILL', restartInMs: 1000 });
    expect(crash.msg).toContain('restarting it in 1 s');
    const restarted = await stack.waitFor((l) => l.msg?.startsWith('worker started (pid') && l.childPid !== worker.childPid);
    expect(() => process.kill(restarted.childPid, 0)).not.toThrow();

    // The API kept running through it, and the new worker does the work.
    const http = new HttpClient(`http://127.0.0.1:${port}`);
    const { project } = await accountWithProject(http);
    const rows = ['email,plan', ...Array.from({ length: 300 }, (_, i) => `after-restart${i}@example.com,pro`)];
    const upload = await uploadFile(http.baseUrl, '/contacts/import', project.secretKey, { name: 'contacts.csv', content: rows.join('\n') });
    expect(upload.status).toBe(202);
    const job = await eventually(
      async () => {
        const res = await http.get(`/contacts/import/${upload.body.jobId}`, { key: project.secretKey });
        if (res.body.status !== 'COMPLETED') throw new Error(`import ${res.body.status}`);
        return res.body;
      },
      90_000,
      250,
    );
    expect(job.processed).toBe(300);
    expect(stack.logs.filter((l) => l.msg?.startsWith('api started (pid'))).toEqual([api]);

    stack.child.kill('SIGTERM');
    expect(await stack.exited).toBe(0);
    expect(stack.logs.some((l) => l.msg === 'worker stopped' && l.process === 'worker')).toBe(true);
  }, 240_000);

  it('stops the stack, naming the child and quoting its output, after 5 crashes in a row', async () => {
    // A real failure: the API's port is taken, so every API start fails.
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      const stack = startStack({ ...testEnv(), DATABASE_URL: databaseUrl, PORT: String(port) });
      stacks.push(stack);
      expect(await stack.exited).toBe(1);

      const restarts = stack.logs.filter((l) => l.process === 'api' && /exited unexpectedly/.test(l.msg ?? ''));
      expect(restarts.map((l) => l.restartInMs)).toEqual([1000, 2000, 4000, 8000]);
      const gaveUp = stack.logs.find((l) => l.level === 'fatal' && l.process === 'api')!;
      expect(gaveUp.msg).toBe('api crashed 5 times in a row, each within 60 s of starting; giving up and stopping Mailroom');
      expect(gaveUp.lastOutput.join('\n')).toContain('EADDRINUSE');
      // The same, for the person at the terminal.
      const all = stack.text.join('\n');
      expect(all).toContain('Mailroom is stopping: the api crashed 5 times in a row, each within 60 s of starting. Its last output:');
      expect(all).toMatch(/ {2}\| .*EADDRINUSE/);
      // Only the API was restarted; the worker ran until the stack stopped.
      expect(stack.logs.filter((l) => l.msg?.startsWith('worker started (pid'))).toHaveLength(1);
      expect(stack.logs.some((l) => l.msg === 'worker stopped' && l.process === 'worker')).toBe(true);
    } finally {
      taken.close();
    }
  }, 240_000);
});
