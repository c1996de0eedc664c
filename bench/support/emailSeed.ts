/**
 * One project's email records made by PostgreSQL itself (bench:emails, bench:dashboard-lists):
 * each to one of the given recipients, a year of created_at, statuses in the shares a sending
 * project sees (mostly SENT/DELIVERED/OPENED, 1 % BOUNCED, 0.1 % FAILED, 0.01 % COMPLAINED, none
 * QUEUED), 30 % of them campaign mail. Short bodies: a list never reads them.
 */
import type { Client } from 'pg';
import { pseudoRandom as h } from './seedSql';

/** The status of email n by its share (per 10,000). */
const STATUS_SQL = `case
  when ${h(1)} % 10000 < 1 then 'COMPLAINED'
  when ${h(1)} % 10000 < 11 then 'FAILED'
  when ${h(1)} % 10000 < 111 then 'BOUNCED'
  when ${h(1)} % 10000 < 211 then 'SUPPRESSED'
  when ${h(1)} % 10000 < 511 then 'CLICKED'
  when ${h(1)} % 10000 < 1511 then 'OPENED'
  when ${h(1)} % 10000 < 5011 then 'DELIVERED'
  else 'SENT' end`;

/** Contacts `reader<n>@example.org`, n = 1..count, subscribed, no data: the recipients of bench:emails. */
export async function seedReaders(db: Client, projectId: string, count: number): Promise<void> {
  await db.query(
    `insert into contacts (project_id, email, subscribed, data)
     select $1, 'reader' || n || '@example.org', true, '{}'::jsonb from generate_series(1, $2::int) n`,
    [projectId, count],
  );
}

/** `count` sent marketing campaigns ("campaign 1"…), for the emails to belong to; their ids, by name. */
export async function seedCampaigns(db: Client, projectId: string, count: number): Promise<string[]> {
  await db.query(
    `insert into campaigns (project_id, name, subject, body, from_address, type, audience_type, status)
     select $1, 'campaign ' || n, 'Issue ' || n, '<p>hi</p>', 'news@example.org', 'MARKETING', 'ALL', 'SENT' from generate_series(1, $2::int) n`,
    [projectId, count],
  );
  return (await db.query(`select array_agg(id order by name) as ids from campaigns where project_id = $1`, [projectId])).rows[0].ids;
}

/** The first `count` contacts of the project by email (all when fewer): ids and addresses, aligned. */
export async function recipientsOf(db: Client, projectId: string, count: number): Promise<{ ids: string[]; addresses: string[] }> {
  const [row] = (
    await db.query(
      `select array_agg(id order by email) as ids, array_agg(email order by email) as addresses
       from (select id, email from contacts where project_id = $1 order by email limit $2) c`,
      [projectId, count],
    )
  ).rows;
  return { ids: row.ids ?? [], addresses: row.addresses ?? [] };
}

/**
 * Inserts emails 1..count, `chunk` per statement (printing each chunk's time): email n goes to a
 * recipient picked by n's hash; the first campaigns × recipients emails are 30 % campaign mail,
 * campaign c taking each recipient at most once (a campaign email's (campaign, contact) is unique).
 */
export async function seedEmails(
  db: Client,
  projectId: string,
  count: number,
  options: { recipients: { ids: string[]; addresses: string[] }; campaignIds: string[]; chunk?: number },
): Promise<void> {
  const chunk = options.chunk ?? 250_000;
  const { ids, addresses } = options.recipients;
  if (ids.length === 0) throw new Error('seedEmails needs at least one recipient');
  for (let from = 1; from <= count; from += chunk) {
    const to = Math.min(from + chunk - 1, count);
    const t = performance.now();
    await db.query(
      `insert into emails (id, project_id, contact_id, campaign_id, source, type, subject, from_address, to_address, html, text,
                           status, message_id, attempts, sent_at, delivered_at, opened_at, clicked_at, bounced_at, complained_at, created_at, updated_at)
       select gen_random_uuid(), $1, ($2::uuid[])[1 + cx], camp, case when camp is null then 'TRANSACTIONAL' else 'CAMPAIGN' end,
              case when camp is null then 'TRANSACTIONAL' else 'MARKETING' end, 'Subject ' || n, 'news@example.org',
              ($8::text[])[1 + cx], '<p>short</p>', 'short', st, 'bench-' || n || '@example.org', 1,
              case when st not in ('SUPPRESSED', 'FAILED') then ts end,
              case when st in ('DELIVERED', 'OPENED', 'CLICKED') then ts end,
              case when st in ('OPENED', 'CLICKED') then ts end,
              case when st = 'CLICKED' then ts end,
              case when st = 'BOUNCED' then ts end,
              case when st = 'COMPLAINED' then ts end,
              ts, ts
       from (
         select n, ${STATUS_SQL} as st,
                now() - (${h(2)} % (365 * 86400)) * interval '1 second' as ts,
                case when ${h(3)} % 10 < 3 and n <= $4::int * $5::int then ($3::uuid[])[1 + (n - 1) / $5::int] end as camp,
                case when ${h(3)} % 10 < 3 and n <= $4::int * $5::int then (n - 1) % $5::int else ${h(4)} % $5::int end as cx
         from generate_series($6::int, $7::int) n
       ) s`,
      [projectId, ids, options.campaignIds, options.campaignIds.length, ids.length, from, to, addresses],
    );
    process.stdout.write(`  inserted ${to.toLocaleString('en')} emails (${((performance.now() - t) / 1000).toFixed(1)} s for this chunk)\n`);
  }
}
