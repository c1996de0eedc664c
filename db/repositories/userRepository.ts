import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { UserSchema, type User } from '../entities/user';
import { UserTokenSchema, type UserTokenPurpose, type UserToken } from '../entities/userToken';
import { hmacBase64Url, sha256Hex } from '../../lib/crypto';

/**
 * A mailed token is derived from its row id with the instance secret, so the raw token is never
 * stored anywhere (not in the database, not in Temporal history); only its SHA-256 is kept.
 */
export function deriveUserToken(secret: string, tokenId: string): string {
  return hmacBase64Url(secret, `user-token:${tokenId}`);
}

export const userRepository = {
  async findByEmail(em: EntityManager, email: string): Promise<User | null> {
    return em.findOne(UserSchema, { email });
  },

  async findById(em: EntityManager, id: string): Promise<User | null> {
    return em.findOne(UserSchema, { id });
  },

  /** Inserts the user; null when the email is already taken (concurrent signups included). */
  async create(em: EntityManager, email: string, passwordHash: string): Promise<User | null> {
    const rows = await em.execute<Array<{ id: string }>>(
      `insert into users (email, password_hash) values (?, ?) on conflict (email) do nothing returning id`,
      [email, passwordHash],
    );
    if (!rows.length) return null;
    return em.findOneOrFail(UserSchema, { id: rows[0].id });
  },

  async issueToken(em: EntityManager, secret: string, userId: string, purpose: UserTokenPurpose, ttlMs: number): Promise<UserToken> {
    const id = randomUUID();
    const token = em.create(UserTokenSchema, {
      id,
      userId,
      purpose,
      tokenHash: sha256Hex(deriveUserToken(secret, id)),
      expiresAt: new Date(Date.now() + ttlMs),
    });
    await em.flush();
    return token;
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
};
