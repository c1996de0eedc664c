import type { EntityManager } from '@mikro-orm/postgresql';
import { queryRows, type TimestampText } from '../sql/rows';

export interface EventRow {
  id: string;
  name: string;
  contactId: string | null;
  data: unknown;
  source: 'API' | 'SYSTEM';
  emailId: string | null;
  createdAt: Date;
  /** Write order (bigint as text): lists and their cursors order by it. Not part of the API shape. */
  seq: string;
}

/** An `events` row as a statement returns it (the columns toEvent reads). */
interface EventTableRow {
  id: string;
  name: string;
  contact_id: string | null;
  /** jsonb, parsed by the driver. */
  data: unknown;
  source: EventRow['source'];
  email_id: string | null;
  created_at: TimestampText;
  /** bigint: node-postgres gives int8 as text. */
  seq: string;
}

function toEvent(row: EventTableRow): EventRow {
  return {
    id: row.id,
    name: row.name,
    contactId: row.contact_id,
    data: row.data ?? null,
    source: row.source,
    emailId: row.email_id ?? null,
    createdAt: new Date(row.created_at),
    seq: String(row.seq),
  };
}

export const eventRepository = {
  /**
   * Newest first, in the order the events were written (`seq`, see the EventOrder migration):
   * the newest subscription event of a contact is always the one that decided its state.
   * Keyset-paginated on seq: `after` is the seq of the last event served.
   */
  async list(em: EntityManager, projectId: string, q: { limit: number; name?: string; contactId?: string; after?: string; withTotal: boolean }) {
    const where = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.name) {
      where.push('name = ?');
      params.push(q.name);
    }
    if (q.contactId) {
      where.push('contact_id = ?');
      params.push(q.contactId);
    }
    const filterWhere = where.join(' and ');
    const filterParams = [...params];
    if (q.after) {
      where.push('seq < ?');
      params.push(q.after);
    }
    const rows = await queryRows<EventTableRow>(em, `select * from events where ${where.join(' and ')} order by seq desc limit ?`, [...params, q.limit + 1]);
    let total = 0;
    if (q.withTotal) total = (await queryRows<{ n: number }>(em, `select count(*)::int as n from events where ${filterWhere}`, filterParams))[0].n;
    return { events: rows.slice(0, q.limit).map(toEvent), hasMore: rows.length > q.limit, total };
  },

  async stats(em: EntityManager, projectId: string) {
    const [totals] = await queryRows<{ total: number; last24h: number; last7d: number }>(
      em,
      `select count(*)::int as total,
              count(*) filter (where created_at > now() - interval '24 hours')::int as last24h,
              count(*) filter (where created_at > now() - interval '7 days')::int as last7d
       from events where project_id = ?`,
      [projectId],
    );
    const byName = await em.execute<Array<{ name: string; count: number }>>(
      `select name, count(*)::int as count from events where project_id = ? group by name order by count desc, name`,
      [projectId],
    );
    return { total: totals.total, last24h: totals.last24h, last7d: totals.last7d, byName };
  },

  async names(em: EntityManager, projectId: string): Promise<string[]> {
    const rows = await em.execute<Array<{ name: string }>>(`select distinct name from events where project_id = ? order by name`, [projectId]);
    return rows.map((r) => r.name);
  },

  async deleteByName(em: EntityManager, projectId: string, name: string): Promise<number> {
    const [row] = await queryRows<{ n: number }>(
      em,
      `with gone as (delete from events where project_id = ? and name = ? returning 1) select count(*)::int as n from gone`,
      [projectId, name],
    );
    return row.n;
  },
};
