import crypto from 'node:crypto';
import { ensureDatabase } from '../../launcher/embeddedPostgres';
import { createOrm, type Orm } from '../../db/orm';
import { dropTestDatabase } from '../support/testStack';

/**
 * The AnalyticsRollups migration fills its tables from the rows that exist, with the definitions
 * the triggers apply afterwards: a database with history, migrated, equals a direct count.
 */
let url: string;
let orm: Orm;

beforeAll(async () => {
  url = await ensureDatabase(process.env.MAILROOM_TEST_PG_SERVER_URL!, `mailroom_test_${crypto.randomBytes(6).toString('hex')}`);
  orm = await createOrm(url, { pool: { min: 0, max: 2 } });
  await orm.getMigrator().up({ to: 'Migration20261123110000AutomationWorkflows' });
});

afterAll(async () => {
  await orm?.close(true);
  if (url) await dropTestDatabase(url);
});

const sql = (query: string, params: unknown[] = []) => orm.em.fork().execute(query, params);

it('backfills hourly, daily and campaign counts, event and workflow counts from existing rows', async () => {
  const [project] = await sql(`insert into projects (name, public_key, secret_key_hash, secret_key_hint) values ('p', 'pk_x', 'h', 'x') returning id`);
  await sql(`insert into contacts (project_id, email) select ?, 'c' || n || '@example.org' from generate_series(1, 40) n`, [project.id]);
  const [campaign] = await sql(
    `insert into campaigns (project_id, name, subject, body, from_address, audience_type, status) values (?, 'C', 's', 'b', 'a@example.com', 'ALL', 'SENT') returning id`,
    [project.id],
  );
  // 400 emails over 10 days, every combination of feedback; the first 40 a campaign's (one per contact).
  await sql(
    `insert into emails (id, project_id, contact_id, campaign_id, source, subject, from_address, to_address, status, message_id,
                         created_at, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at)
     select gen_random_uuid(), ?, c.id, case when n <= 40 then ?::uuid end,
            case when n <= 40 then 'CAMPAIGN' when n % 4 = 1 then 'WORKFLOW' else 'TRANSACTIONAL' end,
            's', 'a@example.com', c.email, 'SENT', 'm', t, case when n % 7 <> 0 then t end,
            case when n % 3 = 0 then t end, case when n % 5 = 0 then t end, case when n % 10 = 0 then t end,
            case when n % 11 = 0 then t end, case when n % 13 = 0 then t end
     from (select n, timestamptz '2026-03-01 00:00Z' + n * interval '37 minutes' as t, 1 + n % 40 as k from generate_series(1, 400) n) s
     join (select id, email, row_number() over (order by email) as k from contacts where project_id = ?) c on c.k = s.k`,
    [project.id, campaign.id, project.id],
  );
  await sql(
    `insert into events (project_id, contact_id, name, created_at)
     select ?, c.id, case when n % 5 = 0 then 'contact.unsubscribed' else 'event-' || (n % 3) end, timestamptz '2026-03-05 00:00Z' + n * interval '11 minutes'
     from generate_series(1, 300) n join (select id, row_number() over (order by email) as k from contacts where project_id = ?) c on c.k = 1 + n % 40`,
    [project.id, project.id],
  );

  const [workflow] = await sql(`insert into workflows (project_id, name, trigger_event_name) values (?, 'W', 'event-1') returning id`, [project.id]);
  await sql(
    `insert into workflow_executions (project_id, workflow_id, contact_id, started_at)
     select ?, ?, id, timestamptz '2026-03-02 10:00Z' + row_number() over (order by email) * interval '5 hours' from contacts where project_id = ? limit 3`,
    [project.id, workflow.id, project.id],
  );

  await orm.getMigrator().up();

  const direct = await sql(
    `with unsubscribes as (
       select latest.id, count(*) as n from events ev
       cross join lateral (select em.id from emails em where em.contact_id = ev.contact_id and em.sent_at <= ev.created_at
                            and not (em.source = 'CAMPAIGN' and em.campaign_id is null) order by em.created_at desc, em.id desc limit 1) latest
       where ev.project_id = ? and ev.name = 'contact.unsubscribed' group by latest.id
     )
     select date_trunc('day', e.created_at, 'UTC') as day, e.source,
            count(*) filter (where sent_at is not null)::int as sent,
            count(*) filter (where coalesce(delivered_at, opened_at, clicked_at) is not null)::int as delivered,
            count(*) filter (where opened_at is not null)::int as opened, count(*) filter (where clicked_at is not null)::int as clicked,
            count(*) filter (where bounced_at is not null)::int as bounced, count(*) filter (where complained_at is not null)::int as complained,
            coalesce(sum(u.n), 0)::int as unsubscribed
     from emails e left join unsubscribes u on u.id = e.id where e.project_id = ? group by 1, 2 order by 1, 2`,
    [project.id, project.id],
  );
  const metrics = 'sent::int, delivered::int, opened::int, clicked::int, bounced::int, complained::int, unsubscribed::int';
  expect(await sql(`select bucket as day, source, ${metrics} from analytics_email_daily where project_id = ? order by 1, 2`, [project.id])).toEqual(direct);
  const hourlyByDay = await sql(
    `select date_trunc('day', bucket, 'UTC') as day, source, ${['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'].map((m) => `sum(${m})::int as ${m}`).join(', ')}
     from analytics_email_hourly where project_id = ? group by 1, 2 order by 1, 2`,
    [project.id],
  );
  expect(hourlyByDay).toEqual(direct);
  expect(direct.reduce((n: number, r: any) => n + r.unsubscribed, 0)).toBe(60);

  const [perCampaign] = await sql(`select ${metrics} from analytics_campaign_counts where campaign_id = ?`, [campaign.id]);
  const campaignDirect = direct.filter((r: any) => r.source === 'CAMPAIGN');
  for (const m of ['sent', 'opened', 'bounced', 'unsubscribed']) expect(perCampaign[m]).toBe(campaignDirect.reduce((n: number, r: any) => n + r[m], 0));

  const events = await sql(`select name, sum(count)::int as n from analytics_event_daily where project_id = ? group by 1 order by 1`, [project.id]);
  expect(events).toEqual(await sql(`select name, count(*)::int as n from events where project_id = ? group by 1 order by 1`, [project.id]));

  expect(
    await sql(`select to_char(bucket at time zone 'UTC', 'YYYY-MM-DD') as day, started::int from analytics_workflow_daily where project_id = ? order by 1`, [
      project.id,
    ]),
  ).toEqual([
    { day: '2026-03-02', started: 2 },
    { day: '2026-03-03', started: 1 },
  ]);

  // From now on the triggers keep counting on top of the backfill.
  await sql(`update emails set opened_at = now() where project_id = ? and opened_at is null and source = 'WORKFLOW'`, [project.id]);
  const [after] = await sql(`select sum(opened)::int as opened from analytics_email_daily where project_id = ?`, [project.id]);
  const [count] = await sql(`select count(*)::int as n from emails where project_id = ? and opened_at is not null`, [project.id]);
  expect(after.opened).toBe(count.n);
});
