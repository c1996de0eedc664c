import { startTestStack, type TestStack } from '../support/testStack';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';
import { eventually } from '../support/eventually';
import { HttpClient } from '../support/http';
import { accountWithProject } from '../support/accounts';
import { createOrm } from '../../db/orm';

describe('GET /health', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false });
  });
  afterAll(() => stack.stop());

  it('answers 200 with the database and Temporal ok', async () => {
    const res = await stack.http.get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok', temporal: 'ok' });
  });
});

describe('GET /health when a dependency is down', () => {
  it('answers 200 degraded naming Temporal when only Temporal is unreachable (the API stays in service)', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' }), DATABASE_URL: databaseUrl });
    try {
      const http = new HttpClient(api.url);
      const res = await http.get('/health');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'degraded', database: 'ok', temporal: 'down' });

      // What needs Temporal says so honestly and leaves nothing half-done behind.
      const signup = await http.post('/auth/signup', { email: 'no-temporal@example.com', password: 'a fine password' });
      expect(signup.status).toBe(201);
      expect(signup.body.verificationEmailSent).toBe(false);
      const { project } = await accountWithProject(http);
      const bulk = await http.post('/contacts/bulk-subscribe', { contactIds: ['00000000-0000-4000-8000-000000000000'] }, { key: project.secretKey });
      expect(bulk.status).toBe(503);
      expect(bulk.body.error.code).toBe('SERVICE_UNAVAILABLE');
      const orm = await createOrm(databaseUrl);
      try {
        expect((await orm.em.fork().execute(`select count(*)::int as n from jobs`))[0].n).toBe(0);
      } finally {
        await orm.close();
      }
    } finally {
      api.kill();
      await api.exited;
      await dropTestDatabase(databaseUrl);
    }
  }, 180_000); // an API process start: up to 120 s on a loaded machine (test/support/processes.ts)

  it('answers 503 naming the database when PostgreSQL stops answering', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv(), DATABASE_URL: databaseUrl });
    try {
      const http = new HttpClient(api.url);
      // Ready once its Temporal setup is done, a moment after it listens.
      await eventually(async () => expect((await http.get('/health')).status).toBe(200));
      // Dropping the database (WITH FORCE) ends the API's connections and leaves nothing to reconnect to.
      await dropTestDatabase(databaseUrl);
      const res = await http.get('/health');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ database: 'down', temporal: 'ok' });
    } finally {
      api.kill();
      await api.exited;
    }
  }, 180_000); // an API process start: up to 120 s on a loaded machine (test/support/processes.ts)
});
