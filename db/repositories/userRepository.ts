import type { EntityManager } from '@mikro-orm/postgresql';
import { UserSchema, type User } from '../entities/user';
import type { UserTokenPurpose } from '../entities/userToken';
import { hmacBase64Url, sha256Hex } from '../../lib/crypto';
import { sessionRepository } from './sessionRepository';

/**
 * A mailed token is derived from its row id with the instance secret, so the raw token is never
 * stored anywhere (not in the database, not in Temporal history); only its SHA-256 is kept.
 */
export function deriveUserToken(secret: string, tokenId: string): string {
  return hmacBase64Url(secret, `user-token:${tokenId}`);
}

const TOKEN_TTL_MS: Record<UserTokenPurpose, number> = { VERIFY_EMAIL: 24 * 3600_000, RESET_PASSWORD: 3600_000 };

/** At most this many mails of one purpose to one account per window (issue 13): a request beyond is answered the same and mails nothing. */
export const ACCOUNT_MAIL_LIMIT = { mails: 3, windowMinutes: 15 } as const;

export type IssueTokenResult = { issued: true; tokenId: string } | { issued: false; reason: 'NO_ACCOUNT' | 'ALREADY_VERIFIED' | 'MAIL_LIMIT_REACHED' };

export const userRepository = {
  async findByEmail(em: EntityManager, email: string): Promise<User | null> {
    return em.findOne(UserSchema, { email });
  },

  async findById(em: EntityManager, id: string): Promise<User | null> {
    return em.findOne(UserSchema, { id });
  },

  /** Inserts the user; null when the email is already taken (concurrent signups included). */
  async create(em: EntityManager, email: string, passwordHash: string): Promise<User | null> {
    const rows = await em.execute<Array<{ id: string }>>(`insert into users (email, password_hash) values (?, ?) on conflict (email) do nothing returning id`, [
      email,
      passwordHash,
    ]);
    if (!rows.length) return null;
    return em.findOneOrFail(UserSchema, { id: rows[0].id });
  },

  /** Replaces the hash of an unchanged password (an upgrade to the current hash at login). */
  async replacePasswordHash(em: EntityManager, userId: string, oldHash: string, newHash: string): Promise<void> {
    await em.execute(`update users set password_hash = ? where id = ? and password_hash = ?`, [newHash, userId, oldHash]);
  },

  /**
   * Issues the token for one requested account mail, with the given row id (chosen by the caller, so
   * a retried request finds its token instead of issuing another). Within the account's row lock, so
   * concurrent requests on any process count each other: at most ACCOUNT_MAIL_LIMIT tokens of a
   * purpose per window; a new reset token retires the account's older ones.
   */
  async issueMailedToken(em: EntityManager, secret: string, tokenId: string, email: string, purpose: UserTokenPurpose): Promise<IssueTokenResult> {
    return em.transactional(async (tx) => {
      const [user] = await tx.execute<Array<{ id: string; verified: boolean }>>(
        `select id, email_verified_at is not null as verified from users where email = ? for update`,
        [email],
      );
      if (!user) return { issued: false, reason: 'NO_ACCOUNT' } as const;
      const [existing] = await tx.execute(`select 1 from user_tokens where id = ? and user_id = ?`, [tokenId, user.id]);
      if (existing) return { issued: true, tokenId } as const;
      if (purpose === 'VERIFY_EMAIL' && user.verified) return { issued: false, reason: 'ALREADY_VERIFIED' } as const;
      const [recent] = await tx.execute<Array<{ n: number }>>(
        `select count(*)::int as n from user_tokens where user_id = ? and purpose = ? and created_at > now() - make_interval(mins => ?)`,
        [user.id, purpose, ACCOUNT_MAIL_LIMIT.windowMinutes],
      );
      if (recent.n >= ACCOUNT_MAIL_LIMIT.mails) return { issued: false, reason: 'MAIL_LIMIT_REACHED' } as const;
      if (purpose === 'RESET_PASSWORD') {
        await tx.execute(`update user_tokens set used_at = now() where user_id = ? and purpose = 'RESET_PASSWORD' and used_at is null`, [user.id]);
      }
      await tx.execute(`insert into user_tokens (id, user_id, purpose, token_hash, expires_at) values (?, ?, ?, ?, now() + make_interval(secs => ?))`, [
        tokenId,
        user.id,
        purpose,
        sha256Hex(deriveUserToken(secret, tokenId)),
        TOKEN_TTL_MS[purpose] / 1000,
      ]);
      return { issued: true, tokenId } as const;
    });
  },

  /** Marks the token used and returns it, only if it is unused, unexpired and of that purpose: single use, race-free. */
  async consumeToken(em: EntityManager, rawToken: string, purpose: UserTokenPurpose): Promise<{ id: string; userId: string } | null> {
    const rows = await em.execute<Array<{ id: string; user_id: string }>>(
      `update user_tokens set used_at = now()
       where token_hash = ? and purpose = ? and used_at is null and expires_at > now()
       returning id, user_id`,
      [sha256Hex(rawToken), purpose],
    );
    return rows.length ? { id: rows[0].id, userId: rows[0].user_id } : null;
  },

  /**
   * Sets a new password with a reset token, all or nothing: the token is used, every other open
   * token of the account is retired, every session ends, and the address counts as verified (the
   * mail reached it). Null when the token is invalid, expired or already used.
   */
  async resetPassword(em: EntityManager, rawToken: string, passwordHash: string): Promise<{ userId: string } | null> {
    return em.transactional(async (tx) => {
      const consumed = await userRepository.consumeToken(tx, rawToken, 'RESET_PASSWORD');
      if (!consumed) return null;
      await tx.execute(`update users set password_hash = ?, email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = ?`, [
        passwordHash,
        consumed.userId,
      ]);
      await tx.execute(`update user_tokens set used_at = now() where user_id = ? and used_at is null`, [consumed.userId]);
      await sessionRepository.endAllOfUser(tx, consumed.userId);
      return { userId: consumed.userId };
    });
  },

  async markEmailVerified(em: EntityManager, userId: string): Promise<void> {
    await em.execute(`update users set email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = ?`, [userId]);
  },

  /**
   * Removes at most `limit` tokens that can no longer be used (used, or expired) and were issued
   * more than `issuedSecondsAgo` ago (the retention); answers how many went.
   */
  async deleteSpentTokens(em: EntityManager, issuedSecondsAgo: number, limit: number): Promise<number> {
    const [row] = await em.execute(
      `with gone as (
         delete from user_tokens where id in (
           select id from user_tokens
           where (used_at is not null or expires_at < now()) and created_at < now() - make_interval(secs => ?)
           limit ?)
         returning 1
       )
       select count(*)::int as n from gone`,
      [issuedSecondsAgo, limit],
    );
    return row.n;
  },
};
