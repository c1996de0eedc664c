import type { EntityManager } from '@mikro-orm/postgresql';
import { queryRows, type TimestampText } from '../sql/rows';

export type SuppressionReason = 'BOUNCE' | 'COMPLAINT' | 'MANUAL';

export interface Suppression {
  email: string;
  reason: SuppressionReason;
  emailId: string | null;
  createdAt: Date;
}

/** Where a page ended: the last entry's created_at to the microsecond, and its address. */
export interface SuppressionKey {
  t: string;
  email: string;
}

const COLUMNS = `email, reason, email_id, created_at, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as key_t`;

/** COLUMNS as a statement returns them: the `email_suppressions` columns read, and the page key. */
interface SuppressionTableRow {
  email: string;
  reason: SuppressionReason;
  email_id: string | null;
  created_at: TimestampText;
  key_t: string;
}

const toSuppression = (r: SuppressionTableRow): Suppression => ({
  email: r.email,
  reason: r.reason,
  emailId: r.email_id ?? null,
  createdAt: new Date(r.created_at),
});

/**
 * A project's suppression list as its owner manages it (contract 20). Bounces and complaints add
 * to it in db/emails/emailFeedbackRepository.ts; the send paths read it (emailRepository
 * `suppressedAddresses`). Addresses are stored as api/schemas/commonFields.ts `emailAddress` makes them.
 */
export const suppressionRepository = {
  async page(
    em: EntityManager,
    projectId: string,
    options: { email?: string; limit: number; after?: SuppressionKey },
  ): Promise<{ entries: Suppression[]; hasMore: boolean; last: SuppressionKey | null }> {
    const where = ['project_id = ?'];
    const params: unknown[] = [projectId];
    if (options.email) {
      where.push('email = ?');
      params.push(options.email);
    }
    if (options.after) {
      where.push('(created_at, email) < (?::timestamptz, ?)');
      params.push(options.after.t, options.after.email);
    }
    params.push(options.limit + 1);
    const rows = await queryRows<SuppressionTableRow>(
      em,
      `select ${COLUMNS} from email_suppressions where ${where.join(' and ')} order by created_at desc, email desc limit ?`,
      params,
    );
    const hasMore = rows.length > options.limit;
    const served = rows.slice(0, options.limit);
    const lastRow = served.at(-1);
    return { entries: served.map(toSuppression), hasMore, last: lastRow ? { t: lastRow.key_t, email: lastRow.email } : null };
  },

  /**
   * Suppresses `email` by hand. An address already suppressed keeps its entry (a bounce stays a
   * bounce): `created` says which. Concurrent adds of one address meet on the primary key, and
   * the one that loses reads the winner's entry.
   */
  async add(em: EntityManager, projectId: string, email: string): Promise<{ entry: Suppression; created: boolean }> {
    for (;;) {
      const [inserted] = await queryRows<SuppressionTableRow>(
        em,
        `insert into email_suppressions (project_id, email, reason) values (?, ?, 'MANUAL')
         on conflict (project_id, email) do nothing returning ${COLUMNS}`,
        [projectId, email],
      );
      if (inserted) return { entry: toSuppression(inserted), created: true };
      const [existing] = await queryRows<SuppressionTableRow>(em, `select ${COLUMNS} from email_suppressions where project_id = ? and email = ?`, [
        projectId,
        email,
      ]);
      // Lifted between the two statements: try again.
      if (existing) return { entry: toSuppression(existing), created: false };
    }
  },

  /** Lifts the suppression of `email`; false when it was not suppressed. */
  async remove(em: EntityManager, projectId: string, email: string): Promise<boolean> {
    const rows = await em.execute(`delete from email_suppressions where project_id = ? and email = ? returning email`, [projectId, email]);
    return rows.length > 0;
  },
};
