import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/** Mail captured by the local outbox transport when SMTP_URL is unset (contract 9). */
export const OutboxMessageSchema = defineEntity({
  name: 'OutboxMessage',
  tableName: 'outbox_messages',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    projectId: p.uuid().nullable(),
    messageId: p.string().columnType('text'),
    from: p.string().columnType('text').fieldName('from_address'),
    to: p.array().columnType('text[]').fieldName('to_addresses'),
    subject: p.string().columnType('text'),
    raw: p.blob().columnType('bytea'),
    size: p.integer(),
    createdAt: p.datetime().columnType('timestamptz').defaultRaw('now()'),
  },
});
export type OutboxMessage = InferEntity<typeof OutboxMessageSchema>;
