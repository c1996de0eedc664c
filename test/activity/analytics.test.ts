import { startTestStack, type TestStack } from '../support/testStack';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';
import { accountWithProject, type TestProject } from '../support/accounts';
import { projectWithVerifiedDomain } from '../support/sendingProject';
import { eventually } from '../support/eventually';
import { insertContact } from '../support/emailFixtures';
import { dailyMismatches, directEmailCounts, feedbackLinks, insertHistoricEmail, rollupEmailCounts, sqlOf, startSnsSender } from './analyticsFixtures';

/**
 * GET /analytics/* over real sends, real feedback (tracking links, the SNS webhook, the
 * unsubscribe page, a campaign send) and SQL-written history; and the rollups equal to a direct
 * count of the emails and events after all of it.
 */
let dns: TestDnsServer;
let smtp: TestSmtpServer;
let stack: TestStack;
let sns: Awaited<ReturnType<typeof startSnsSender>>;
let sql: ReturnType<typeof sqlOf>;

beforeAll(async () => {
  dns = await startTestDnsServer();
  smtp = await startSmtpServer();
  stack = await startTestStack({
    env: { DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '2500', SMTP_URL: smtp.url, DELIVERY_RETRY_DELAYS: '1s', RATE_LIMIT_PER_MINUTE: '0' },
  });
  sns = await startSnsSender(stack);
  sql = sqlOf(stack);
});

afterAll(async () => {
  await sns?.close();
  await stack?.stop();
  await smtp?.close();
  await dns?.close();
});

const get = (project: TestProject, path: string) => stack.http.get(path, { key: project.secretKey });

async function untilSent(emailIds: string[]) {
  await eventually(async () => {
    const rows = await sql(`select count(*)::int as n from emails where id = any(?::uuid[]) and sent_at is not null`, [`{${emailIds.join(',')}}`]);
    if (rows[0].n !== emailIds.length) throw new Error(`${rows[0].n} of ${emailIds.length} sent`);
  }, 60_000);
}

describe('rollups follow every path that changes an email', () => {
  it('after sends, opens, clicks, SNS deliveries, bounces, complaints, unsubscribes and a campaign, the rollups equal a direct count', async () => {
    const { project, domain } = await projectWithVerifiedDomain(stack, dns);
    const recipients = Array.from({ length: 8 }, (_, i) => `reader-${i}@example.org`);
    const sent: Array<{ emailId: string; contactId: string; to: string }> = [];
    // Subscribed contacts (a send alone creates unsubscribed ones), so the campaign and unsubscribes apply.
    for (const to of recipients) await insertContact(stack, project.id, { email: to });
    for (const to of recipients) {
      const res = await stack.http.post(
        '/v1/send',
        { to, from: `news@${domain}`, subject: 'Hi', body: '<p>Hello <a href="https://example.com/a">a</a></p>' },
        { key: project.secretKey },
      );
      expect(res.status).toBe(200);
      sent.push({ emailId: res.body.data.emails[0].email, contactId: res.body.data.emails[0].contact.id, to });
    }
    await untilSent(sent.map((s) => s.emailId));
    const messageId = (i: number) => `<${sent[i].emailId}@${domain}>`;

    const links = sent.map((s) => feedbackLinks(stack, s));
    await links[0].open();
    await links[0].open(); // a second open counts once
    await links[1].open();
    await links[1].click();
    await links[2].click(); // a click without an open counts as both
    await sns.notify({ messageId: messageId(3), to: sent[3].to }, 'Delivery');
    await sns.notify({ messageId: messageId(3), to: sent[3].to }, 'Delivery'); // a replay counts once
    await sns.notify({ messageId: messageId(4), to: sent[4].to }, 'Bounce'); // also unsubscribes the contact
    await sns.notify({ messageId: messageId(5), to: sent[5].to }, 'Complaint');
    await links[6].unsubscribe();

    // A campaign to every subscribed contact (those not bounced, complained or unsubscribed).
    const created = await stack.http.post(
      '/campaigns',
      { name: 'Autumn', subject: 'Autumn news', body: '<p>News <a href="https://example.com/n">n</a></p>', from: `news@${domain}`, audienceType: 'ALL' },
      { key: project.secretKey },
    );
    const campaignId = created.body.data.id;
    expect((await stack.http.post(`/campaigns/${campaignId}/send`, {}, { key: project.secretKey })).status).toBe(200);
    await eventually(async () => {
      const c = await get(project, `/campaigns/${campaignId}`);
      if (c.body.status !== 'SENT') throw new Error(c.body.status);
    }, 60_000);
    const campaignEmails = await sql(`select id, contact_id from emails where campaign_id = ? order by to_address`, [campaignId]);
    expect(campaignEmails).toHaveLength(5);
    await feedbackLinks(stack, { emailId: campaignEmails[0].id, contactId: campaignEmails[0].contact_id }).click();
    await feedbackLinks(stack, { emailId: campaignEmails[1].id, contactId: campaignEmails[1].contact_id }).open();
    await feedbackLinks(stack, { emailId: campaignEmails[2].id, contactId: campaignEmails[2].contact_id }).unsubscribe();
    // A campaign test copy counts nowhere.
    expect((await stack.http.post(`/campaigns/${campaignId}/test`, { email: 'tester@example.org' }, { key: project.secretKey })).status).toBe(200);
    await eventually(async () => {
      const [row] = await sql(
        `select count(*)::int as n from emails where project_id = ? and campaign_id is null and source = 'CAMPAIGN' and sent_at is not null`,
        [project.id],
      );
      if (row.n !== 1) throw new Error('test copy not sent yet');
    });

    const direct = await directEmailCounts(stack, project.id);
    expect(await rollupEmailCounts(stack, project.id)).toEqual(direct);
    expect(await dailyMismatches(stack, project.id)).toEqual([]);
    const total = (source: string) =>
      Object.entries(direct)
        .filter(([k]) => k.endsWith(source))
        .reduce(
          (acc, [, v]) => ({ ...acc, ...Object.fromEntries(Object.entries(v).map(([m, n]) => [m, ((acc as any)[m] ?? 0) + n])) }),
          {} as Record<string, number>,
        );
    // What the direct count says, spelled out: the definitions at work.
    expect(total('TRANSACTIONAL')).toEqual({ sent: 8, delivered: 4, opened: 3, clicked: 2, bounced: 1, complained: 1, unsubscribed: 3 });
    expect(total('CAMPAIGN')).toEqual({ sent: 5, delivered: 2, opened: 2, clicked: 1, bounced: 0, complained: 0, unsubscribed: 1 });

    // Per campaign: the same counts, and the campaign's own stats agree where their definitions meet.
    const [perCampaign] = await sql(
      `select sum(sent)::int as sent, sum(delivered)::int as delivered, sum(opened)::int as opened, sum(clicked)::int as clicked, sum(unsubscribed)::int as unsubscribed
         from analytics_campaign_counts where campaign_id = ?`,
      [campaignId],
    );
    expect(perCampaign).toEqual({ sent: 5, delivered: 2, opened: 2, clicked: 1, unsubscribed: 1 });
    const stats = await get(project, `/campaigns/${campaignId}/stats`);
    expect(stats.body.data).toMatchObject({ sentCount: 5, deliveredCount: 2, openedCount: 2, clickedCount: 1, bouncedCount: 0, unsubscribedCount: 1 });

    // The endpoints over the same rollups.
    const series = await get(project, '/analytics/timeseries?granularity=hour&start=' + new Date(Date.now() - 3600_000).toISOString());
    expect(series.status).toBe(200);
    const sum = (m: string) => series.body.points.reduce((n: number, p: any) => n + p[m], 0);
    expect([sum('sent'), sum('opened'), sum('clicked'), sum('bounced'), sum('complained'), sum('unsubscribed')]).toEqual([13, 5, 3, 1, 1, 4]);
    const campaignOnly = await get(project, '/analytics/timeseries?source=CAMPAIGN');
    expect(campaignOnly.body.points.reduce((n: number, p: any) => n + p.sent, 0)).toBe(5);

    const top = await get(project, '/analytics/top-campaigns');
    expect(top.body.data).toEqual([
      expect.objectContaining({
        id: campaignId,
        name: 'Autumn',
        sent: 5,
        delivered: 2,
        opened: 2,
        clicked: 1,
        unsubscribed: 1,
        deliveryRate: 40,
        openRate: 40,
        clickRate: 20,
        clickToOpenRate: 50,
        bounceRate: 0,
        unsubscribeRate: 20,
      }),
    ]);
    const totals = await get(project, '/analytics/campaign-stats');
    expect(totals.body).toMatchObject({ campaigns: 1, sent: 5, opened: 2, clicked: 1, openRate: 40, clickToOpenRate: 50 });

    const activityStats = await get(project, '/activity/stats');
    expect(activityStats.body).toMatchObject({ totalEmailsSent: 13, totalEmailsOpened: 5, totalEmailsClicked: 3, openRate: 38.46, clickRate: 23.08 });
  }, 180_000);

  it('a statement that moves many emails writes the counters once, in the same transaction (rolled back with it)', async () => {
    const { project } = await accountWithProject(stack.http);
    const contacts = await Promise.all(Array.from({ length: 50 }, (_, i) => insertContact(stack, project.id, { email: `bulk-${i}@example.org` })));
    for (const c of contacts) await insertHistoricEmail(stack, project.id, c.contactId, '2026-06-01T10:15:00Z', { sent: false });
    // One statement over 50 rows: one upsert of one counter row.
    await sql(`update emails set status = 'SENT', sent_at = now() where project_id = ?`, [project.id]);
    expect(await rollupEmailCounts(stack, project.id)).toEqual({ '2026-06-01T10 TRANSACTIONAL': expect.objectContaining({ sent: 50 }) });
    // A transaction that fails takes its counts with it.
    await expect(
      stack.orm.em.fork().transactional(async (tx) => {
        await tx.execute(`update emails set opened_at = now(), status = 'OPENED' where project_id = ?`, [project.id]);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await rollupEmailCounts(stack, project.id)).toEqual({ '2026-06-01T10 TRANSACTIONAL': expect.objectContaining({ sent: 50, opened: 0 }) });
    expect(await rollupEmailCounts(stack, project.id)).toEqual(await directEmailCounts(stack, project.id));
    expect(await dailyMismatches(stack, project.id)).toEqual([]);
  });
});

describe('GET /analytics/timeseries over history', () => {
  let project: TestProject;
  beforeAll(async () => {
    ({ project } = await accountWithProject(stack.http));
    const { contactId } = await insertContact(stack, project.id);
    await insertHistoricEmail(stack, project.id, contactId, '2026-01-03T05:10:00Z', { opened: true });
    await insertHistoricEmail(stack, project.id, contactId, '2026-01-03T23:59:59Z', { clicked: true });
    await insertHistoricEmail(stack, project.id, contactId, '2026-01-05T00:00:00Z', { source: 'WORKFLOW', bounced: true });
    await insertHistoricEmail(stack, project.id, contactId, '2026-01-05T12:00:00Z', { sent: false });
  });

  it('answers every day of the range, zeros included, in UTC', async () => {
    const res = await get(project, '/analytics/timeseries?start=2026-01-01&end=2026-01-07');
    expect(res.status).toBe(200);
    expect(res.body.granularity).toBe('day');
    expect(res.body.points.map((p: any) => p.bucket)).toEqual(
      ['2026-01-01', '2026-01-02', '2026-01-03', '2026-01-04', '2026-01-05', '2026-01-06'].map((d) => `${d}T00:00:00Z`),
    );
    const byDay = Object.fromEntries(res.body.points.map((p: any) => [p.bucket.slice(0, 10), p]));
    expect(byDay['2026-01-03']).toEqual({
      bucket: '2026-01-03T00:00:00Z',
      sent: 2,
      delivered: 2,
      opened: 2,
      clicked: 1,
      bounced: 0,
      complained: 0,
      unsubscribed: 0,
    });
    expect(byDay['2026-01-05']).toMatchObject({ sent: 1, bounced: 1, delivered: 0 });
    expect(byDay['2026-01-04']).toMatchObject({ sent: 0, opened: 0 });
  });

  it('by hour, and by source', async () => {
    const hours = await get(project, '/analytics/timeseries?granularity=hour&start=2026-01-03T00:00:00Z&end=2026-01-04T00:00:00Z');
    expect(hours.body.points).toHaveLength(24);
    expect(hours.body.points[5]).toMatchObject({ bucket: '2026-01-03T05:00:00Z', sent: 1, opened: 1 });
    expect(hours.body.points[23]).toMatchObject({ bucket: '2026-01-03T23:00:00Z', sent: 1, clicked: 1 });
    // A start inside an hour covers that whole hour.
    const partial = await get(project, '/analytics/timeseries?granularity=hour&start=2026-01-03T05:30:00%2B00:00&end=2026-01-03T07:00:00Z');
    expect(partial.body.points.map((p: any) => [p.bucket, p.sent])).toEqual([
      ['2026-01-03T05:00:00Z', 1],
      ['2026-01-03T06:00:00Z', 0],
    ]);
    const workflow = await get(project, '/analytics/timeseries?start=2026-01-01&end=2026-01-07&source=WORKFLOW');
    expect(workflow.body.points.map((p: any) => p.sent)).toEqual([0, 0, 0, 0, 1, 0]);
    const transactional = await get(project, '/analytics/timeseries?start=2026-01-01&end=2026-01-07&source=TRANSACTIONAL');
    expect(transactional.body.points.map((p: any) => p.sent)).toEqual([0, 0, 2, 0, 0, 0]);
  });

  it('totals over ranges made of whole days and edge hours', async () => {
    const sentIn = async (start: string, end: string) => {
      const res = await get(project, `/activity/stats?start=${start}&end=${end}`);
      expect(res.status).toBe(200);
      return [res.body.totalEmailsSent, res.body.totalEmailsOpened, res.body.totalEmailsClicked];
    };
    expect(await sentIn('2026-01-02T12:00:00Z', '2026-01-06T12:00:00Z')).toEqual([3, 2, 1]); // days 3, 4, 5 + edge hours
    expect(await sentIn('2026-01-03T05:30:00Z', '2026-01-05T00:30:00Z')).toEqual([3, 2, 1]); // from the 05:00 hour to the 00:00 hour
    expect(await sentIn('2026-01-03T06:00:00Z', '2026-01-05T00:30:00Z')).toEqual([2, 1, 1]);
    expect(await sentIn('2026-01-03T05:00:00Z', '2026-01-05T00:00:00Z')).toEqual([2, 2, 1]);
    expect(await sentIn('2026-01-03T23:00:00Z', '2026-01-04T01:00:00Z')).toEqual([1, 1, 1]); // hours only
    expect(await sentIn('2026-01-04T00:00:00Z', '2026-01-05T00:00:00Z')).toEqual([0, 0, 0]); // one empty day
    const series = await get(project, '/analytics/timeseries?start=2026-01-03T06:00:00Z&end=2026-01-05T01:00:00Z');
    expect(series.body.points.map((p: any) => [p.bucket.slice(0, 10), p.sent])).toEqual([
      ['2026-01-03', 1],
      ['2026-01-04', 0],
      ['2026-01-05', 1],
    ]);
  });

  it('by default: the last 30 days by day, today included', async () => {
    const res = await get(project, '/analytics/timeseries');
    expect(res.status).toBe(200);
    expect(res.body.points).toHaveLength(31);
    expect(res.body.points[30].bucket).toBe(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  });

  it('refuses ranges over 366 days and bad parameters with a 400', async () => {
    expect((await get(project, '/analytics/timeseries?start=2025-01-01&end=2026-01-02')).status).toBe(200); // 366 days
    const cases = [
      'start=2025-01-01&end=2026-01-03',
      'start=2024-01-01',
      'start=2026-01-05&end=2026-01-01',
      'start=2026-01-05&end=2026-01-05',
      'granularity=week',
      'granularity=',
      'source=EMAIL',
      'source=campaign',
      'start=yesterday',
      'start=2026-13-01',
      'start=2026-01-01T10:00:00',
      'end=' + 'x'.repeat(5000),
      'start=2026-01-01&start=2026-01-02',
    ];
    for (const query of cases) {
      const res = await get(project, `/analytics/timeseries?${query}`);
      expect({ query, status: res.status, code: res.body.error?.code }).toEqual({ query, status: 400, code: 'BAD_REQUEST' });
    }
  });

  it('needs the secret key', async () => {
    expect((await stack.http.get('/analytics/timeseries', { key: project.publicKey })).status).toBe(401);
    expect((await stack.http.get('/analytics/timeseries')).status).toBe(401);
  });
});

describe('top events, top campaigns, campaign stats', () => {
  it('top-events counts custom events of the range only, most frequent first', async () => {
    const { project } = await accountWithProject(stack.http);
    for (const [event, n] of [
      ['signed-up', 3],
      ['purchase', 5],
      ['viewed', 1],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const res = await stack.http.post('/v1/track', { email: `t${i}@example.org`, event }, { key: project.publicKey });
        expect(res.status).toBe(200);
      }
    }
    const { contactId } = await insertContact(stack, project.id);
    // Service-emitted names are not custom events; an old event is outside the default range.
    await sql(
      `insert into events (project_id, contact_id, name, source, created_at) values
         (?, ?, 'email.sent', 'SYSTEM', now()), (?, ?, 'segment.vip.entry', 'SYSTEM', now()), (?, ?, 'purchase', 'API', now() - interval '40 days')`,
      [project.id, contactId, project.id, contactId, project.id, contactId],
    );
    const top = await get(project, '/analytics/top-events');
    expect(top.body.data).toEqual([
      { name: 'purchase', count: 5 },
      { name: 'signed-up', count: 3 },
      { name: 'viewed', count: 1 },
    ]);
    expect((await get(project, '/analytics/top-events?limit=1')).body.data).toEqual([{ name: 'purchase', count: 5 }]);
    const longer = await get(project, `/analytics/top-events?start=${new Date(Date.now() - 60 * 86400_000).toISOString()}`);
    expect(longer.body.data[0]).toEqual({ name: 'purchase', count: 6 });
    expect((await get(project, '/activity/stats')).body.totalEvents).toBe(9);
    for (const bad of ['limit=0', 'limit=-1', 'limit=abc', 'limit=1.5']) expect((await get(project, `/analytics/top-events?${bad}`)).status).toBe(400);
    expect((await get(project, '/analytics/top-events?limit=5000')).status).toBe(200); // capped at 100
  });

  it('top-campaigns and campaign-stats take the campaigns whose sending started in the range; rates are 0 when nothing was sent', async () => {
    const { project } = await accountWithProject(stack.http);
    const empty = await get(project, '/analytics/campaign-stats');
    expect(empty.body).toMatchObject({ campaigns: 0, sent: 0, openRate: 0, clickToOpenRate: 0, deliveryRate: 0 });
    const { contactId } = await insertContact(stack, project.id);
    const other = await insertContact(stack, project.id);
    const campaign = async (name: string, startedAt: string) => {
      const [row] = await sql(
        `insert into campaigns (project_id, name, subject, body, from_address, audience_type, status, audience_fixed_at, sent_at)
         values (?, ?, 'S', '<p>b</p>', 'news@example.com', 'ALL', 'SENT', ?, ?) returning id`,
        [project.id, name, startedAt, startedAt],
      );
      return row.id as string;
    };
    const march = await campaign('March', '2026-03-10T09:00:00Z');
    const april = await campaign('April', '2026-04-10T09:00:00Z');
    await insertHistoricEmail(stack, project.id, contactId, '2026-03-10T09:00:01Z', { source: 'CAMPAIGN', campaignId: march, clicked: true });
    await insertHistoricEmail(stack, project.id, other.contactId, '2026-03-10T09:00:01Z', { source: 'CAMPAIGN', campaignId: march });
    await insertHistoricEmail(stack, project.id, contactId, '2026-04-10T09:00:01Z', { source: 'CAMPAIGN', campaignId: april, opened: true });
    await insertHistoricEmail(stack, project.id, other.contactId, '2026-04-10T09:00:01Z', { source: 'CAMPAIGN', campaignId: april, opened: true });
    await insertHistoricEmail(stack, project.id, (await insertContact(stack, project.id)).contactId, '2026-04-10T09:00:01Z', {
      source: 'CAMPAIGN',
      campaignId: april,
      bounced: true,
    });

    const both = await get(project, '/analytics/top-campaigns?start=2026-03-01&end=2026-05-01');
    expect(both.body.data.map((c: any) => [c.name, c.sent, c.opened, c.clicked, c.bounced, c.openRate, c.clickToOpenRate, c.bounceRate])).toEqual([
      ['April', 3, 2, 0, 1, 66.67, 0, 33.33],
      ['March', 2, 1, 1, 0, 50, 100, 0],
    ]);
    expect((await get(project, '/analytics/top-campaigns?start=2026-03-01&end=2026-05-01&limit=1')).body.data).toHaveLength(1);
    const march1 = await get(project, '/analytics/campaign-stats?start=2026-03-01&end=2026-04-01');
    expect(march1.body).toMatchObject({ campaigns: 1, sent: 2, opened: 1, clicked: 1, clickRate: 50 });
    const all = await get(project, '/analytics/campaign-stats?start=2026-03-01&end=2026-05-01');
    expect(all.body).toMatchObject({
      campaigns: 2,
      sent: 5,
      opened: 3,
      clicked: 1,
      bounced: 1,
      openRate: 60,
      clickRate: 20,
      bounceRate: 20,
      clickToOpenRate: 33.33,
    });
  });
});
