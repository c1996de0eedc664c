import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    email: p.string().columnType('text').unique(),
    passwordHash: p.string().columnType('text').hidden(),
    emailVerifiedAt: p.datetime().columnType('timestamptz').nullable(),
    createdAt: p.datetime().columnType('timestamptz').defaultRaw('now()'),
    updatedAt: p
      .datetime()
      .columnType('timestamptz')
      .defaultRaw('now()')
      .onUpdate(() => new Date()),
  },
});
export type User = InferEntity<typeof UserSchema>;
