import type { EntityManager } from '@mikro-orm/postgresql';
import { toContact, type ContactRow, type ContactTableRow } from './contactRepository';
import { queryRows } from '../sql/rows';

export type ContactSort = 'createdAt' | 'email';
export type SortDir = 'asc' | 'desc';

/**
 * Counting every match of a broad search (say "@gmail.com" in a million contacts) means reading
 * every matching row, which takes longer than the page itself by orders of magnitude. Searches
 * therefore count exactly up to this many matches and report the total as capped beyond it;
 * lists without a search keep their exact total.
 */
export const SEARCH_TOTAL_CAP = 10_000;

export interface ContactListQuery {
  limit: number;
  search?: string;
  subscribed?: boolean;
  sort: ContactSort;
  dir: SortDir;
  /** The sort key and id of the last contact of the previous page. */
  after?: { v: string; id: string };
  withTotal: boolean;
}

/** `%`, `_` and `\` match themselves in a search, as a user typing them would expect. */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

const sortColumn: Record<ContactSort, string> = { createdAt: 'created_at', email: 'email' };

export const contactQueries = {
  /**
   * One keyset page. Search is a case-insensitive substring match on the (lower-cased) email,
   * answered by the trigram index contacts_project_email_trgm_index.
   */
  async list(
    em: EntityManager,
    projectId: string,
    q: ContactListQuery,
  ): Promise<{ contacts: ContactRow[]; hasMore: boolean; total: number; totalCapped: boolean }> {
    const where: string[] = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (q.search) {
      where.push(`email like ?`);
      params.push(likeContains(q.search.toLowerCase()));
    }
    if (q.subscribed !== undefined) {
      where.push('subscribed = ?');
      params.push(q.subscribed);
    }
    const filterWhere = where.join(' and ');
    const filterParams = [...params];
    // Both go into the SQL text, so they are read from fixed strings here, whatever the caller passed.
    const col = q.sort === 'email' ? sortColumn.email : sortColumn.createdAt;
    const dir = q.dir === 'asc' ? 'asc' : 'desc';
    const op = dir === 'desc' ? '<' : '>';
    if (q.after) {
      where.push(`(${col}, id) ${op} (?, ?)`);
      params.push(q.sort === 'createdAt' ? new Date(q.after.v) : q.after.v, q.after.id);
    }
    const rows = await queryRows<ContactTableRow>(em, `select * from contacts where ${where.join(' and ')} order by ${col} ${dir}, id ${dir} limit ?`, [
      ...params,
      q.limit + 1,
    ]);
    let total = 0;
    let totalCapped = false;
    if (q.withTotal) {
      const [count] = q.search
        ? await queryRows<{ n: number }>(em, `select count(*)::int as n from (select 1 from contacts where ${filterWhere} limit ?) s`, [
            ...filterParams,
            SEARCH_TOTAL_CAP + 1,
          ])
        : await queryRows<{ n: number }>(em, `select count(*)::int as n from contacts where ${filterWhere}`, filterParams);
      totalCapped = count.n > SEARCH_TOTAL_CAP && Boolean(q.search);
      total = totalCapped ? SEARCH_TOTAL_CAP : count.n;
    }
    const hasMore = rows.length > q.limit;
    return { contacts: rows.slice(0, q.limit).map(toContact), hasMore, total, totalCapped };
  },

  async lookup(em: EntityManager, projectId: string, emails: string[]) {
    return em.execute<Array<{ id: string; email: string; subscribed: boolean }>>(
      `select id, email, subscribed from contacts where project_id = ? and email in (select jsonb_array_elements_text(?::jsonb))`,
      [projectId, JSON.stringify(emails)],
    );
  },

  async countAll(em: EntityManager, projectId: string): Promise<number> {
    const [row] = await em.execute(`select count(*)::int as n from contacts where project_id = ?`, [projectId]);
    return row.n;
  },
};
