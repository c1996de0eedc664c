import type { EntityManager } from '@mikro-orm/postgresql';
import { CUSTOM_EVENT_NAME_SQL } from './emailMetrics';
import { SYSTEM_EVENT_NAMES, type SystemEventName } from '../events/systemEventNames';

/** The activity types of contract section 15, in the order GET /activity/types lists them. */
export const ACTIVITY_TYPES = [
  'event.triggered',
  'email.sent',
  'email.suppressed',
  'email.delivered',
  'email.opened',
  'email.clicked',
  'email.bounced',
  'email.complained',
  'email.received',
  'contact.subscribed',
  'contact.unsubscribed',
  'campaign.scheduled',
  'campaign.sent',
  'workflow.started',
  'workflow.completed',
] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/**
 * An `email.sent` event is written exactly when its email's `sent_at` is set, and
 * `events_project_created_index` leaves that name out (Migration20261203020000): the feed's sends
 * are the emails by `sent_at` (`emails_project_sent_index`), the item's id the email's.
 */
const SENT = 'email.sent';

/**
 * Types that are events Mailroom records under the same name and the feed reads from `events`.
 * `email.failed` is one of those events but no feed type: contract section 15 does not list it,
 * so the feed leaves it out. `email.sent` is read from `emails` instead (below).
 */
const EVENT_NAMED_TYPES: ActivityType[] = SYSTEM_EVENT_NAMES.filter(
  (name): name is Extract<SystemEventName, ActivityType> => (ACTIVITY_TYPES as readonly string[]).includes(name) && name !== SENT,
);

/** The sort key of the feed: newest first by time, then id, then type (a record can be two items). */
export interface FeedPosition {
  /** The item's time as PostgreSQL text, microseconds kept, so a page ends exactly where it ends. */
  t: string;
  id: string;
  type: string;
}

export interface FeedQuery {
  types: ReadonlySet<ActivityType>;
  contactId?: string;
  start: Date;
  end?: Date;
  limit: number;
  after?: FeedPosition;
}

export interface ActivityItem {
  id: string;
  type: ActivityType;
  timestamp: Date;
  contactId?: string;
  contactEmail?: string;
  metadata: Record<string, unknown>;
}

interface FeedRow {
  type: ActivityType;
  id: string;
  ts: Date;
  ts_text: string;
  contact_id: string | null;
  email_id: string | null;
  name: string | null;
  data: any;
}

const TS_TEXT = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * One source of the feed: its rows of the window, newest first, at most `limit`, each shaped
 * (type, id, ts, ts_text, contact_id, email_id, name, data). `ts` names the source's time column.
 */
function sourceQuery(
  q: FeedQuery,
  projectId: string,
  spec: { select: string; from: string; ts: string; where: string[]; type: string; contact: string | null },
) {
  const where = [...spec.where, `${spec.ts} >= ?`];
  const params: unknown[] = [projectId, q.start];
  if (q.end) {
    where.push(`${spec.ts} < ?`);
    params.push(q.end);
  }
  if (q.contactId) {
    if (!spec.contact) return null;
    where.push(`${spec.contact} = ?`);
    params.push(q.contactId);
  }
  if (q.after) {
    // The first condition lets the time index bound the scan; the row comparison breaks ties.
    where.push(`${spec.ts} <= ?::timestamptz`, `(${spec.ts}, ${spec.type}::text, id) < (?::timestamptz, ?::text, ?::uuid)`);
    params.push(q.after.t, q.after.t, q.after.type, q.after.id);
  }
  return {
    sql: `(select ${spec.type}::text as type, id, ${spec.ts} as ts, ${TS_TEXT(spec.ts)} as ts_text, ${spec.select}
            from ${spec.from} where project_id = ? and ${where.join(' and ')}
            order by ${spec.ts} desc, ${spec.type}::text desc, id desc limit ${q.limit + 1})`,
    params,
  };
}

function feedSources(q: FeedQuery, projectId: string) {
  const wanted = (t: ActivityType) => q.types.has(t);
  const sources = [];
  const names = EVENT_NAMED_TYPES.filter(wanted);
  const nameConditions = [];
  const nameParams: unknown[] = [];
  if (names.length) {
    nameConditions.push(`name = any(?::text[])`);
    nameParams.push(`{${names.join(',')}}`);
  }
  if (wanted('event.triggered')) nameConditions.push(`(${CUSTOM_EVENT_NAME_SQL('name')})`);
  if (nameConditions.length) {
    const s = sourceQuery(q, projectId, {
      type: `(case when ${CUSTOM_EVENT_NAME_SQL('name')} then 'event.triggered' else name end)`,
      select: 'contact_id, email_id, name, data',
      from: 'events',
      ts: 'created_at',
      // Said outright so that PostgreSQL sees the partial time index applies.
      where: [`name <> '${SENT}'`, `(${nameConditions.join(' or ')})`],
      contact: 'contact_id',
    });
    // The name filter's parameters come right after project_id.
    if (s) sources.push({ sql: s.sql, params: [s.params[0], ...nameParams, ...s.params.slice(1)] });
  }
  const fixed = (type: ActivityType, spec: Omit<Parameters<typeof sourceQuery>[2], 'type'>) => {
    if (!wanted(type)) return;
    const s = sourceQuery(q, projectId, { ...spec, type: `'${type}'` });
    if (s) sources.push(s);
  };
  fixed(SENT, {
    select: 'contact_id, id as email_id, null::text as name, null::jsonb as data',
    from: 'emails',
    ts: 'sent_at',
    where: ['sent_at is not null'],
    contact: 'contact_id',
  });
  fixed('email.suppressed', {
    select: 'contact_id, id as email_id, null::text as name, null::jsonb as data',
    from: 'emails',
    ts: 'created_at',
    where: [`status = 'SUPPRESSED'`],
    contact: 'contact_id',
  });
  // When a campaign was scheduled is not recorded apart from its last change while SCHEDULED.
  fixed('campaign.scheduled', {
    select: 'null::uuid as contact_id, null::uuid as email_id, name, null::jsonb as data',
    from: 'campaigns',
    ts: 'updated_at',
    where: [`status = 'SCHEDULED'`],
    contact: null,
  });
  fixed('campaign.sent', {
    select: 'null::uuid as contact_id, null::uuid as email_id, name, null::jsonb as data',
    from: 'campaigns',
    ts: 'sent_at',
    where: ['sent_at is not null'],
    contact: null,
  });
  fixed('workflow.started', {
    select: 'contact_id, null::uuid as email_id, null::text as name, null::jsonb as data',
    from: 'workflow_executions',
    ts: 'started_at',
    where: [],
    contact: 'contact_id',
  });
  fixed('workflow.completed', {
    select: 'contact_id, null::uuid as email_id, null::text as name, null::jsonb as data',
    from: 'workflow_executions',
    ts: 'completed_at',
    where: [`status = 'COMPLETED'`],
    contact: 'contact_id',
  });
  return sources;
}

const compact = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

export const activityRepository = {
  /** A page of the feed, newest first, and whether more follow. */
  async page(em: EntityManager, projectId: string, q: FeedQuery): Promise<{ items: ActivityItem[]; last: FeedPosition | null; hasMore: boolean }> {
    const sources = feedSources(q, projectId);
    if (!sources.length) return { items: [], last: null, hasMore: false };
    const rows: FeedRow[] = await em.execute(
      `select * from (${sources.map((s) => s.sql).join(' union all ')}) feed order by ts desc, type desc, id desc limit ?`,
      [...sources.flatMap((s) => s.params), q.limit + 1],
    );
    const hasMore = rows.length > q.limit;
    const pageRows = rows.slice(0, q.limit);
    const items = await enrich(em, projectId, pageRows);
    const lastRow = pageRows[pageRows.length - 1];
    return { items, last: lastRow ? { t: lastRow.ts_text, id: lastRow.id, type: lastRow.type } : null, hasMore };
  },

  /** Feed items of the last five minutes (every type). */
  async recentCount(em: EntityManager, projectId: string): Promise<number> {
    const [row] = await em.execute(
      `select
         (select count(*) from events where project_id = ? and created_at >= now() - interval '5 minutes'
            and name <> '${SENT}' and (name = any(?::text[]) or (${CUSTOM_EVENT_NAME_SQL('name')})))
       + (select count(*) from emails where project_id = ? and sent_at >= now() - interval '5 minutes')
       + (select count(*) from emails where project_id = ? and status = 'SUPPRESSED' and created_at >= now() - interval '5 minutes')
       + (select count(*) from campaigns where project_id = ? and status = 'SCHEDULED' and updated_at >= now() - interval '5 minutes')
       + (select count(*) from campaigns where project_id = ? and sent_at >= now() - interval '5 minutes')
       + (select count(*) from workflow_executions where project_id = ? and started_at >= now() - interval '5 minutes')
       + (select count(*) from workflow_executions where project_id = ? and status = 'COMPLETED' and completed_at >= now() - interval '5 minutes')
         as n`,
      [projectId, `{${EVENT_NAMED_TYPES.join(',')}}`, projectId, projectId, projectId, projectId, projectId, projectId],
    );
    return Number(row.n);
  },

  /**
   * What is due to send in the next `days` days, soonest first: scheduled campaigns, and waiting
   * workflow executions whose wait ends then (a DELAY, or a WAIT_FOR_EVENT's timeout) and whose
   * step after the wait is SEND_EMAIL. What a CONDITION further on would decide is not known
   * before it runs, so only a send right after the wait is listed.
   */
  async upcoming(em: EntityManager, projectId: string, days: number, limit: number) {
    const rows = await em.execute(
      `select * from (
         (select 'campaign' as kind, c.id, c.scheduled_for as at, c.name, c.subject, c.id as campaign_id,
                 null::uuid as workflow_id, null::text as workflow_name, null::uuid as contact_id, null::uuid as template_id
            from campaigns c
           where c.project_id = ? and c.status = 'SCHEDULED' and c.scheduled_for < now() + make_interval(days => ?)
           order by c.scheduled_for limit ?)
         union all
         (select 'workflow' as kind, x.id, x.wait_until as at, s.name, null::text as subject, null::uuid as campaign_id,
                 w.id as workflow_id, w.name as workflow_name, x.contact_id, s.template_id
            from workflow_executions x
            join workflows w on w.id = x.workflow_id
            join workflow_steps cur on cur.id = x.current_step_id and cur.type in ('DELAY', 'WAIT_FOR_EVENT')
            join workflow_transitions t on t.from_step_id = cur.id
                 and (cur.type = 'DELAY' or t.wait_outcome = 'TIMEOUT')
            join workflow_steps s on s.id = t.to_step_id and s.type = 'SEND_EMAIL'
           where x.project_id = ? and x.status = 'WAITING'
             and x.wait_until >= now() and x.wait_until < now() + make_interval(days => ?)
           order by x.wait_until limit ?)
       ) u order by at, id limit ?`,
      [projectId, days, limit, projectId, days, limit, limit],
    );
    const contacts = await contactEmails(
      em,
      projectId,
      rows.map((r: any) => r.contact_id),
    );
    return rows.map((r: any) =>
      r.kind === 'campaign'
        ? {
            type: 'campaign' as const,
            id: r.id as string,
            scheduledFor: new Date(r.at),
            campaignId: r.id as string,
            campaignName: r.name as string,
            subject: r.subject as string,
          }
        : {
            type: 'workflow' as const,
            id: r.id as string,
            scheduledFor: new Date(r.at),
            executionId: r.id as string,
            workflowId: r.workflow_id as string,
            workflowName: r.workflow_name as string,
            stepName: r.name as string,
            ...(r.template_id ? { templateId: r.template_id as string } : {}),
            ...(r.contact_id ? { contactId: r.contact_id as string } : {}),
            ...(contacts.has(r.contact_id) ? { contactEmail: contacts.get(r.contact_id)! } : {}),
          },
    );
  },
};

async function contactEmails(em: EntityManager, projectId: string, ids: Array<string | null>): Promise<Map<string, string>> {
  const unique = [...new Set(ids.filter((id): id is string => !!id))];
  if (!unique.length) return new Map();
  const rows = await em.execute(`select id, email from contacts where project_id = ? and id = any(?::uuid[])`, [projectId, `{${unique.join(',')}}`]);
  return new Map(rows.map((r: any) => [r.id, r.email]));
}

/** Adds the contact's address and the metadata of each item (emails, campaigns, workflows it names). */
async function enrich(em: EntityManager, projectId: string, rows: FeedRow[]): Promise<ActivityItem[]> {
  const emailIds = [...new Set(rows.map((r) => r.email_id).filter((id): id is string => !!id))];
  const campaignIds = rows.filter((r) => r.type.startsWith('campaign.')).map((r) => r.id);
  const executionIds = rows.filter((r) => r.type.startsWith('workflow.')).map((r) => r.id);
  const uuidArray = (ids: string[]) => `{${ids.join(',')}}`;
  const [contacts, emails, campaigns, executions] = await Promise.all([
    contactEmails(
      em,
      projectId,
      rows.map((r) => r.contact_id),
    ),
    emailIds.length
      ? em.execute(
          `select e.id, e.subject, e.from_address, e.from_name, e.source, e.campaign_id, c.name as campaign_name,
                  x.workflow_id, w.name as workflow_name
             from emails e
             left join campaigns c on c.id = e.campaign_id
             left join workflow_executions x on x.id = e.workflow_execution_id
             left join workflows w on w.id = x.workflow_id
            where e.project_id = ? and e.id = any(?::uuid[])`,
          [projectId, uuidArray(emailIds)],
        )
      : [],
    campaignIds.length
      ? em.execute(
          `select id, name, subject, scheduled_for, sent_at, sent_count, total_recipients from campaigns where project_id = ? and id = any(?::uuid[])`,
          [projectId, uuidArray(campaignIds)],
        )
      : [],
    executionIds.length
      ? em.execute(
          `select x.id, x.workflow_id, w.name as workflow_name, x.status from workflow_executions x join workflows w on w.id = x.workflow_id
            where x.project_id = ? and x.id = any(?::uuid[])`,
          [projectId, uuidArray(executionIds)],
        )
      : [],
  ]);
  const byId = <T extends { id: string }>(list: T[]) => new Map(list.map((r) => [r.id, r]));
  const emailById = byId(emails as any[]);
  const campaignById = byId(campaigns as any[]);
  const executionById = byId(executions as any[]);

  return rows.map((r) => {
    let metadata: Record<string, unknown>;
    if (r.type === 'event.triggered') {
      metadata = { eventName: r.name, eventData: r.data ?? null };
    } else if (r.type.startsWith('email.')) {
      const e = r.email_id ? emailById.get(r.email_id) : undefined;
      const { emailId: _e, subject: _s, templateId: _t, campaignId: _c, ...extra } = (r.data ?? {}) as Record<string, unknown>;
      metadata = compact({
        emailId: r.email_id,
        subject: e?.subject ?? r.data?.subject,
        from: e ? (e.from_name ? `${e.from_name} <${e.from_address}>` : e.from_address) : undefined,
        source: e?.source,
        campaignId: e?.campaign_id ?? r.data?.campaignId,
        campaignName: e?.campaign_name,
        workflowId: e?.workflow_id,
        workflowName: e?.workflow_name,
        ...extra,
      });
    } else if (r.type.startsWith('contact.')) {
      metadata = compact({ ...(r.data ?? {}) });
    } else if (r.type.startsWith('campaign.')) {
      const c = campaignById.get(r.id);
      metadata = compact({
        campaignId: r.id,
        campaignName: c?.name ?? r.name,
        subject: c?.subject,
        scheduledFor: c?.scheduled_for ? new Date(c.scheduled_for) : undefined,
        sentCount: r.type === 'campaign.sent' ? c?.sent_count : undefined,
        totalRecipients: r.type === 'campaign.sent' ? c?.total_recipients : undefined,
      });
    } else {
      const x = executionById.get(r.id);
      metadata = compact({ executionId: r.id, workflowId: x?.workflow_id, workflowName: x?.workflow_name, status: x?.status });
    }
    return compact({
      id: r.id,
      type: r.type,
      timestamp: new Date(r.ts),
      contactId: r.contact_id ?? undefined,
      contactEmail: r.contact_id ? contacts.get(r.contact_id) : undefined,
      metadata,
    }) as unknown as ActivityItem;
  });
}
