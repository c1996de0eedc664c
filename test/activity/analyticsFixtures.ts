import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestStack } from '../support/testStack';
import { HttpClient } from '../support/http';
import { startApiServer, type RunningApi } from '../../api/server';
import { emailLinks } from '../../mail/links/signedLinks';

/**
 * Helpers of the activity and analytics tests: feedback through the real endpoints (tracking
 * links, subscription pages, the SNS webhook signed as SNS signs), and the direct counts the
 * rollups must equal.
 */

export const METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'] as const;

export const sqlOf =
  (stack: TestStack) =>
  (query: string, params: unknown[] = []) =>
    stack.orm.em.fork().execute(query, params);

/** The open pixel, a click and the unsubscribe page of one email, fetched over HTTP. */
export function feedbackLinks(stack: TestStack, email: { emailId: string; contactId: string }) {
  const links = emailLinks(stack.config.publicUrl, stack.config.secret, email);
  const local = (url: string) => stack.api.url + url.slice(stack.config.publicUrl.length);
  return {
    open: async () => expect((await fetch(local(links.openPixelUrl))).status).toBe(200),
    click: async (target = 'https://example.com/read') => {
      const res = await fetch(local(links.clickUrl(target)), { redirect: 'manual' });
      expect([301, 302, 303, 307]).toContain(res.status);
    },
    unsubscribe: async () => expect((await fetch(local(links.unsubscribeUrl), { method: 'POST' })).status).toBe(200),
  };
}

const CERT_URL = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123456789abcdef.pem';
const TOPIC_ARN = 'arn:aws:sns:eu-west-1:123456789012:mailroom-ses';

/** A second API process on the same database whose SNS certificate fetch answers our own certificate. */
export async function startSnsSender(stack: TestStack) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-analytics-sns-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'sns.key', '-out', 'sns.crt', '-days', '2', '-subj', '/CN=sns.amazonaws.com'],
    {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const cert = fs.readFileSync(path.join(dir, 'sns.crt'), 'utf8');
  const key = crypto.createPrivateKey(fs.readFileSync(path.join(dir, 'sns.key')));
  const api: RunningApi = await startApiServer(stack.config, stack.logger, {
    host: '127.0.0.1',
    eventTriggers: stack.eventTriggers,
    snsFetch: async (url) => {
      if (url === CERT_URL) return cert;
      throw new Error(`no answer for ${url}`);
    },
  });
  const http = new HttpClient(api.url);

  function signed(fields: Record<string, string>) {
    const message: Record<string, string> = {
      MessageId: crypto.randomUUID(),
      TopicArn: TOPIC_ARN,
      Timestamp: new Date().toISOString(),
      ...fields,
      SignatureVersion: '2',
      SigningCertURL: CERT_URL,
      UnsubscribeURL: `https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=${TOPIC_ARN}:abc`,
    };
    const toSign = ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      .filter((k) => message[k] !== undefined)
      .map((k) => `${k}\n${message[k]}\n`)
      .join('');
    message.Signature = crypto.sign('sha256', Buffer.from(toSign), key).toString('base64');
    return message;
  }

  /** An SES notice about an email, found by its Message-ID header. */
  async function notify(email: { messageId: string; to: string }, type: 'Delivery' | 'Bounce' | 'Complaint') {
    const now = new Date().toISOString();
    const body =
      type === 'Delivery'
        ? { delivery: { timestamp: now, recipients: [email.to], smtpResponse: '250 2.0.0 OK' } }
        : type === 'Bounce'
          ? {
              bounce: {
                bounceType: 'Permanent',
                bounceSubType: 'General',
                bouncedRecipients: [{ emailAddress: email.to, diagnosticCode: 'smtp; 550 5.1.1 user unknown' }],
                timestamp: now,
              },
            }
          : { complaint: { complainedRecipients: [{ emailAddress: email.to }], complaintFeedbackType: 'abuse', timestamp: now } };
    const message = JSON.stringify({
      notificationType: type,
      mail: { timestamp: now, messageId: 'not-known-here', destination: [email.to], headers: [], commonHeaders: { messageId: email.messageId, subject: 'x' } },
      ...body,
    });
    const res = await http.request('POST', '/webhooks/sns', {
      rawBody: JSON.stringify(signed({ Type: 'Notification', Message: message, Subject: 'Amazon SES Email Event Notification' })),
      headers: { 'Content-Type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
    });
    expect(res.status).toBe(200);
  }

  return {
    notify,
    close: async () => {
      await api.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Counts = Record<(typeof METRICS)[number], number>;

/**
 * What the rollup must hold, counted straight from emails and events with the definitions of the
 * AnalyticsRollups migration, by (hour, source): non-zero rows only.
 */
export async function directEmailCounts(stack: TestStack, projectId: string): Promise<Record<string, Counts>> {
  const rows = await sqlOf(stack)(
    `with per_email as (
       select e.id, date_trunc('hour', e.created_at, 'UTC') as bucket, e.source,
              (e.sent_at is not null)::int as sent,
              (coalesce(e.delivered_at, e.opened_at, e.clicked_at) is not null)::int as delivered,
              (e.opened_at is not null)::int as opened, (e.clicked_at is not null)::int as clicked,
              (e.bounced_at is not null)::int as bounced, (e.complained_at is not null)::int as complained
         from emails e where e.project_id = ? and not (e.source = 'CAMPAIGN' and e.campaign_id is null)
     ),
     unsubscribes as (
       select latest.id, count(*) as n from events ev
       cross join lateral (
         select em.id from emails em where em.contact_id = ev.contact_id and em.sent_at <= ev.created_at
           and not (em.source = 'CAMPAIGN' and em.campaign_id is null)
         order by em.created_at desc, em.id desc limit 1
       ) latest
       where ev.project_id = ? and ev.name = 'contact.unsubscribed'
       group by latest.id
     )
     select to_char(p.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24') || ' ' || p.source as key,
            sum(sent)::int as sent, sum(delivered)::int as delivered, sum(opened)::int as opened, sum(clicked)::int as clicked,
            sum(bounced)::int as bounced, sum(complained)::int as complained, coalesce(sum(u.n), 0)::int as unsubscribed
       from per_email p left join unsubscribes u on u.id = p.id
      group by 1`,
    [projectId, projectId],
  );
  return Object.fromEntries(
    rows.filter((r: any) => METRICS.some((m) => r[m] !== 0)).map((r: any) => [r.key, Object.fromEntries(METRICS.map((m) => [m, r[m]]))]),
  );
}

/** The hourly rollup by (hour, source), summed over its shards. */
export async function rollupEmailCounts(stack: TestStack, projectId: string): Promise<Record<string, Counts>> {
  const rows = await sqlOf(stack)(
    `select to_char(bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24') || ' ' || source as key, ${METRICS.map((m) => `sum(${m})::int as ${m}`).join(', ')}
       from analytics_email_hourly where project_id = ? group by 1`,
    [projectId],
  );
  return Object.fromEntries(
    rows.filter((r: any) => METRICS.some((m) => r[m] !== 0)).map((r: any) => [r.key, Object.fromEntries(METRICS.map((m) => [m, r[m]]))]),
  );
}

/** Inserts history rows through the production triggers, for range tests. */
export async function insertHistoricEmail(
  stack: TestStack,
  projectId: string,
  contactId: string,
  at: string,
  options: { source?: string; campaignId?: string; opened?: boolean; clicked?: boolean; bounced?: boolean; sent?: boolean } = {},
) {
  const id = crypto.randomUUID();
  const sent = options.sent ?? true;
  await sqlOf(stack)(
    `insert into emails (id, project_id, contact_id, campaign_id, source, subject, from_address, to_address, status, message_id, created_at,
                         sent_at, opened_at, clicked_at, bounced_at)
     select ?, ?, ?, ?, ?, 'History', 'news@example.com', c.email, ?, ?, ?::timestamptz,
            case when ? then ?::timestamptz + interval '1 minute' end,
            case when ? then ?::timestamptz + interval '2 minutes' end,
            case when ? then ?::timestamptz + interval '3 minutes' end,
            case when ? then ?::timestamptz + interval '2 minutes' end
       from contacts c where c.id = ?`,
    [
      id,
      projectId,
      contactId,
      options.campaignId ?? null,
      options.source ?? 'TRANSACTIONAL',
      options.bounced ? 'BOUNCED' : options.clicked ? 'CLICKED' : options.opened ? 'OPENED' : sent ? 'SENT' : 'FAILED', // never QUEUED: the delivery sweeper would pick it up
      `<${id}@example.com>`,
      at,
      sent,
      at,
      !!(options.opened || options.clicked),
      at,
      !!options.clicked,
      at,
      !!options.bounced,
      at,
      contactId,
    ],
  );
  return id;
}

/** Each day's rollup (summed over its shards) must be the sum of its hours (the same trigger writes both). */
export async function dailyMismatches(stack: TestStack, projectId: string) {
  return sqlOf(stack)(
    `select 'email' as family, d.bucket, d.source as key
       from (select bucket, source, ${METRICS.map((m) => `sum(${m}) as ${m}`).join(', ')} from analytics_email_daily where project_id = ? group by 1, 2) d
       full join (select date_trunc('day', bucket, 'UTC') as bucket, source, ${METRICS.map((m) => `sum(${m}) as ${m}`).join(', ')}
                    from analytics_email_hourly where project_id = ? group by 1, 2) h
         on h.bucket = d.bucket and h.source = d.source
      where (${METRICS.map((m) => `coalesce(d.${m}, 0) <> coalesce(h.${m}, 0)`).join(' or ')})
     union all
     select 'event', d.bucket, d.name from (select bucket, name, sum(count) as count from analytics_event_daily where project_id = ? group by 1, 2) d
       full join (select date_trunc('day', bucket, 'UTC') as bucket, name, sum(count) as count from analytics_event_hourly where project_id = ? group by 1, 2) h
         on h.bucket = d.bucket and h.name = d.name
      where coalesce(d.count, 0) <> coalesce(h.count, 0)`,
    [projectId, projectId, projectId, projectId],
  );
}
