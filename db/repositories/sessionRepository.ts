import type { EntityManager } from '@mikro-orm/postgresql';
import { UserSchema, type User } from '../entities/user';
import { queryRows, type TimestampText } from '../sql/rows';

/**
 * Dashboard sessions. The session cookie is a signed JWT naming a row here; the row is what makes
 * it valid, so logout (one row) and a password reset (every row of the user) end sessions at once.
 */
export const sessionRepository = {
  /** Opens a session; the user's expired sessions are removed on the way, so rows do not pile up. */
  async open(em: EntityManager, userId: string, ttlSeconds: number): Promise<{ id: string; expiresAt: Date }> {
    const rows = await queryRows<{ id: string; expires_at: TimestampText }>(
      em,
      `with expired as (delete from sessions where user_id = ? and expires_at < now())
       insert into sessions (user_id, expires_at) values (?, now() + make_interval(secs => ?)) returning id, expires_at`,
      [userId, userId, ttlSeconds],
    );
    return { id: rows[0].id, expiresAt: new Date(rows[0].expires_at) };
  },

  /** The session's user, in one round trip; null when the session was ended or has expired. */
  async findUser(em: EntityManager, sessionId: string, userId: string): Promise<User | null> {
    const rows = await em.execute(`select u.* from sessions s join users u on u.id = s.user_id where s.id = ? and s.user_id = ? and s.expires_at > now()`, [
      sessionId,
      userId,
    ]);
    return rows.length ? em.map(UserSchema, rows[0]) : null;
  },

  async end(em: EntityManager, sessionId: string): Promise<void> {
    await em.execute(`delete from sessions where id = ?`, [sessionId]);
  },

  async endAllOfUser(em: EntityManager, userId: string): Promise<void> {
    await em.execute(`delete from sessions where user_id = ?`, [userId]);
  },

  /** Removes at most `limit` expired sessions (the retention); answers how many went. */
  async deleteExpired(em: EntityManager, limit: number): Promise<number> {
    const [row] = await em.execute(
      `with gone as (delete from sessions where id in (select id from sessions where expires_at < now() limit ?) returning 1)
       select count(*)::int as n from gone`,
      [limit],
    );
    return row.n;
  },
};
