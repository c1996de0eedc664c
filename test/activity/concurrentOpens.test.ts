import { Client } from 'pg';
import { startTestStack, type TestStack } from '../support/testStack';
import { accountWithProject, type TestProject } from '../support/accounts';
import { dailyMismatches, directEmailCounts, feedbackLinks, rollupEmailCounts, sqlOf } from './analyticsFixtures';

/**
 * Open and click tracking at campaign scale (issue 21): the rollup counters a campaign's hits add
 * to are sharded (Migration20261125010000ShardedRollups), so concurrent writers of one campaign do
 * not queue on one row, and the counts stay exact.
 */
let stack: TestStack;
let sql: ReturnType<typeof sqlOf>;

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  sql = sqlOf(stack);
});

afterAll(async () => {
  await stack?.stop();
});

/** A SENT campaign of `size` emails, one per new contact, written with SQL as a finished send leaves them. */
async function sentCampaign(project: TestProject, size: number) {
  const [campaign] = await sql(
    `insert into campaigns (project_id, name, subject, body, from_address, audience_type, status, audience_fixed_at, sent_at, total_recipients, sent_count)
     values (?, 'Launch', 'News', '<p>x</p>', 'news@example.com', 'ALL', 'SENT', now(), now(), ?, ?) returning id`,
    [project.id, size, size],
  );
  const emails = (await sql(
    `with c as (
       insert into contacts (project_id, email, subscribed) select ?, 'reader' || n || '@example.org', true from generate_series(1, ?) n returning id, email
     )
     insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, status, message_id, sent_at)
     select gen_random_uuid(), ?, c.id, ?, 'CAMPAIGN', 'MARKETING', 'News', 'news@example.com', c.email, 'SENT', '<' || c.id || '@example.com>', now() from c
     returning id as "emailId", contact_id as "contactId"`,
    [project.id, size, project.id, campaign.id],
  )) as Array<{ emailId: string; contactId: string }>;
  return { campaignId: campaign.id as string, emails };
}

const get = (project: TestProject, path: string) => stack.http.get(path, { key: project.secretKey });

async function campaignFigures(project: TestProject, campaignId: string) {
  const stats = await get(project, `/campaigns/${campaignId}/stats`);
  const rollup = await get(project, '/analytics/campaign-stats');
  const [top] = (await get(project, '/analytics/top-campaigns')).body.data;
  const series = await get(project, '/analytics/timeseries?granularity=hour&source=CAMPAIGN&start=' + new Date(Date.now() - 3600_000).toISOString());
  const seriesTotal = (metric: 'opened' | 'clicked' | 'sent') => series.body.points.reduce((n: number, p: any) => n + p[metric], 0);
  return {
    stats: { sent: stats.body.data.sentCount, opened: stats.body.data.openedCount, clicked: stats.body.data.clickedCount },
    rollup: { sent: rollup.body.sent, opened: rollup.body.opened, clicked: rollup.body.clicked, campaigns: rollup.body.campaigns },
    top: { id: top.id, sent: top.sent, opened: top.opened, clicked: top.clicked },
    series: { sent: seriesTotal('sent'), opened: seriesTotal('opened'), clicked: seriesTotal('clicked') },
  };
}

it('a second writer of a campaign counter does not wait for a first one still in its transaction', async () => {
  const { project } = await accountWithProject(stack.http);
  const { campaignId, emails } = await sentCampaign(project, 2);
  const first = new Client({ connectionString: stack.databaseUrl });
  const second = new Client({ connectionString: stack.databaseUrl });
  await first.connect();
  await second.connect();
  try {
    await first.query('begin');
    await first.query(`update emails set opened_at = now(), status = 'OPENED' where id = $1`, [emails[0].emailId]);
    // The first transaction now holds its campaign, hourly and daily counter rows. Before sharding
    // the second update below queued behind it (until the lock timeout ends it here).
    await second.query(`set lock_timeout = '10s'`);
    await second.query(`update emails set opened_at = now(), status = 'OPENED' where id = $1`, [emails[1].emailId]);
    await first.query('commit');
  } finally {
    await first.end();
    await second.end();
  }
  const figures = await campaignFigures(project, campaignId);
  expect(figures.stats).toEqual({ sent: 2, opened: 2, clicked: 0 });
  expect(figures.rollup).toEqual({ sent: 2, opened: 2, clicked: 0, campaigns: 1 });
  expect(figures.top).toEqual({ id: campaignId, sent: 2, opened: 2, clicked: 0 });
  expect(figures.series).toEqual({ sent: 2, opened: 2, clicked: 0 });
  const [shards] = await sql(`select count(*)::int as n from analytics_campaign_counts where campaign_id = ?`, [campaignId]);
  expect(shards.n).toBe(2);
});

it('concurrent opens and clicks of one campaign from many connections give exact stats and rollups', async () => {
  const { project } = await accountWithProject(stack.http);
  const { campaignId, emails } = await sentCampaign(project, 120);
  const links = emails.map((email) => feedbackLinks(stack, email));
  // Every email opened twice and every third one clicked, all at once; a third of the clicks come
  // before any open of their email, so the click counts as the open.
  await Promise.all([...links.map((l) => l.open()), ...links.map((l) => l.open()), ...links.filter((_, i) => i % 3 === 0).map((l) => l.click())]);

  const figures = await campaignFigures(project, campaignId);
  expect(figures.stats).toEqual({ sent: 120, opened: 120, clicked: 40 });
  expect(figures.rollup).toEqual({ sent: 120, opened: 120, clicked: 40, campaigns: 1 });
  expect(figures.top).toEqual({ id: campaignId, sent: 120, opened: 120, clicked: 40 });
  expect(figures.series).toEqual({ sent: 120, opened: 120, clicked: 40 });
  expect(await rollupEmailCounts(stack, project.id)).toEqual(await directEmailCounts(stack, project.id));
  expect(await dailyMismatches(stack, project.id)).toEqual([]);
  const [hits] = await sql(`select sum(opens)::int as opens, sum(clicks)::int as clicks from emails where campaign_id = ?`, [campaignId]);
  // Each open hit counts, and a click on an email not yet opened counts as one more open.
  expect(hits.clicks).toBe(40);
  expect(hits.opens).toBeGreaterThanOrEqual(240);
  expect(hits.opens).toBeLessThanOrEqual(280);
  const events = await sql(`select name, count(*)::int as n from events where project_id = ? group by 1 order by 1`, [project.id]);
  expect(events).toEqual([
    { name: 'email.clicked', n: 40 },
    { name: 'email.opened', n: 120 },
  ]);
  const [eventRollup] = await sql(
    `select sum(count) filter (where name = 'email.opened')::int as opened, sum(count) filter (where name = 'email.clicked')::int as clicked
       from analytics_event_hourly where project_id = ?`,
    [project.id],
  );
  expect(eventRollup).toEqual({ opened: 120, clicked: 40 });
});

it('the same email opened and clicked many times at once counts once per metric, with one event each', async () => {
  const { project } = await accountWithProject(stack.http);
  const { campaignId, emails } = await sentCampaign(project, 1);
  const link = feedbackLinks(stack, emails[0]);
  await Promise.all([...Array.from({ length: 40 }, () => link.open()), ...Array.from({ length: 10 }, () => link.click())]);

  const figures = await campaignFigures(project, campaignId);
  expect(figures.stats).toEqual({ sent: 1, opened: 1, clicked: 1 });
  expect(figures.rollup).toEqual({ sent: 1, opened: 1, clicked: 1, campaigns: 1 });
  expect(figures.series).toEqual({ sent: 1, opened: 1, clicked: 1 });
  const [email] = await sql(`select opens::int, clicks::int, status from emails where id = ?`, [emails[0].emailId]);
  // 40 opens, plus one if a click came first.
  expect([40, 41]).toContain(email.opens);
  expect(email).toMatchObject({ clicks: 10, status: 'CLICKED' });
  const events = await sql(`select name from events where project_id = ? order by seq`, [project.id]);
  expect(events).toEqual([{ name: 'email.opened' }, { name: 'email.clicked' }]);
});
