import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export type UserTokenPurpose = 'VERIFY_EMAIL' | 'RESET_PASSWORD';

/** Single-use, expiring tokens mailed to users; only their SHA-256 is stored. */
export const UserTokenSchema = defineEntity({
  name: 'UserToken',
  tableName: 'user_tokens',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    userId: p.uuid(),
    purpose: p.string().columnType('text').$type<UserTokenPurpose>(),
    tokenHash: p.string().columnType('text').unique(),
    expiresAt: p.datetime().columnType('timestamptz'),
    // Set when the token is used, and when it is retired unused (a newer reset token, a password change).
    usedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz').defaultRaw('now()'),
  },
});
export type UserToken = InferEntity<typeof UserTokenSchema>;
