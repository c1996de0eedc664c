import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';

/** The time in an RFC 9562 v7 id: its first 48 bits, milliseconds since the epoch. */
const millisecondsOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('time-ordered ids (issue 39, append-only keys)', () => {
  it('newTimeOrderedId makes v7 ids that sort in the order they were made, with the time of making', () => {
    const before = Date.now();
    const ids = Array.from({ length: 10_000 }, () => newTimeOrderedId());
    const after = Date.now();
    for (const id of ids) expect(id).toMatch(v7);
    // Many fall in one millisecond: the counter still keeps them in order, and none repeats.
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(millisecondsOf(ids[0])).toBeGreaterThanOrEqual(before);
    expect(millisecondsOf(ids[ids.length - 1])).toBeLessThanOrEqual(after);
  });

  describe('ids the database gives', () => {
    let stack: TestStack;
    let project: TestProject;
    beforeAll(async () => {
      stack = await startTestStack({ worker: false });
      ({ project } = await accountWithProject(stack.http));
    });
    afterAll(() => stack.stop());

    it('an event recorded without an id (the column default) gets a v7 id, later ones larger', async () => {
      const ids: string[] = [];
      for (const event of ['first', 'second', 'third']) {
        const res = await stack.http.post('/v1/track', { email: 'ordered@example.com', event }, { key: project.publicKey });
        expect(res.status).toBe(200);
        ids.push(res.body.data.event);
      }
      for (const id of ids) expect(id).toMatch(v7);
      expect([...ids].sort()).toEqual(ids);
      const rows: Array<{ id: string }> = await stack.orm.em.fork().execute(`select id from events where project_id = ?`, [project.id]);
      expect(rows.length).toBeGreaterThanOrEqual(ids.length);
      for (const row of rows) expect(row.id).toMatch(v7);
    });
  });

  describe('emails: /v1/send and a campaign', () => {
    let dns: TestDnsServer;
    let smtp: TestSmtpServer;
    let stack: TestStack;
    beforeAll(async () => {
      dns = await startTestDnsServer();
      smtp = await startSmtpServer();
      stack = await startTestStack({ env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url } });
    });
    afterAll(async () => {
      await stack?.stop();
      await smtp?.close();
      await dns?.close();
    });

    it('gives every email a v7 id, in the order the emails were made, and its Message-ID carries it', async () => {
      const { project, domain } = await projectWithVerifiedDomain(stack, dns);
      const sent = await stack.http.post(
        '/v1/send',
        { to: ['a@example.org', 'b@example.org', 'c@example.org'], from: `hello@${domain}`, subject: 'Ordered', body: '<p>Hi</p>' },
        { key: project.secretKey },
      );
      expect(sent.status).toBe(200);
      const sendIds: string[] = sent.body.data.emails.map((e: { email: string }) => e.email);
      for (const id of sendIds) expect(id).toMatch(v7);
      expect([...sendIds].sort()).toEqual(sendIds);

      await stack.orm.em
        .fork()
        .execute(`insert into contacts (project_id, email, subscribed) select ?, 'reader' || g || '@example.org', true from generate_series(1, 3) g`, [
          project.id,
        ]);
      const campaign = await stack.http.post(
        '/campaigns',
        { name: 'Ordered', subject: 'News', body: '<p>News</p>', from: `news@${domain}`, audienceType: 'ALL' },
        { key: project.secretKey },
      );
      expect(campaign.status).toBe(201);
      expect((await stack.http.post(`/campaigns/${campaign.body.data.id}/send`, {}, { key: project.secretKey })).status).toBe(200);
      const rows = await eventually(async () => {
        const found: Array<{ id: string; message_id: string }> = await stack.orm.em
          .fork()
          .execute(`select id, message_id from emails where campaign_id = ? order by created_at, id`, [campaign.body.data.id]);
        if (found.length !== 3) throw new Error(`${found.length} of 3 recorded`);
        return found;
      });
      for (const row of rows) {
        expect(row.id).toMatch(v7);
        expect(row.message_id).toBe(`<${row.id}@${domain}>`);
      }
      // Made after the /v1/send emails: larger ids.
      expect(rows.every((row) => row.id > sendIds[sendIds.length - 1])).toBe(true);
    });
  });
});
