import { startTestStack, type TestStack } from '../support/testStack';
import { createTestDatabase, dropTestDatabase, testEnv } from '../support/testStack';
import { spawnApi } from '../support/processes';
import { HttpClient } from '../support/http';

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
  it('answers 503 naming Temporal when Temporal is unreachable', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv({ TEMPORAL_ADDRESS: '127.0.0.1:1' }), DATABASE_URL: databaseUrl });
    try {
      const res = await new HttpClient(api.url).get('/health');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'degraded', database: 'ok', temporal: 'down' });
    } finally {
      api.kill();
      await api.exited;
      await dropTestDatabase(databaseUrl);
    }
  });

  it('answers 503 naming the database when PostgreSQL stops answering', async () => {
    const databaseUrl = await createTestDatabase();
    const api = await spawnApi({ ...testEnv(), DATABASE_URL: databaseUrl });
    try {
      const http = new HttpClient(api.url);
      expect((await http.get('/health')).status).toBe(200);
      // Dropping the database (WITH FORCE) ends the API's connections and leaves nothing to reconnect to.
      await dropTestDatabase(databaseUrl);
      const res = await http.get('/health');
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ database: 'down', temporal: 'ok' });
    } finally {
      api.kill();
      await api.exited;
    }
  });
});
