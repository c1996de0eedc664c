import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const ProjectSchema = defineEntity({
  name: 'Project',
  tableName: 'projects',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    name: p.string().columnType('text'),
    publicKey: p.string().columnType('text').unique(),
    // Only a SHA-256 of the secret key is kept; the key itself is shown once.
    secretKeyHash: p.string().columnType('text').unique().hidden(),
    secretKeyHint: p.string().columnType('text'),
    keysRotatedAt: p.datetime().columnType('timestamptz').nullable(),
    disabled: p.boolean().default(false),
    /** Why it is disabled: PAYMENT_FAILED when Stripe reported a failed payment (contract 17). */
    disabledReason: p.string().columnType('text').nullable().fieldName('disabled_reason'),
    /** Campaign mail per second this project's relay takes; null = CAMPAIGN_RATE_PER_SECOND. */
    campaignRatePerSecond: p.integer().nullable().fieldName('campaign_rate_per_second'),
    createdAt: p.datetime().columnType('timestamptz').defaultRaw('now()'),
    updatedAt: p
      .datetime()
      .columnType('timestamptz')
      .defaultRaw('now()')
      .onUpdate(() => new Date()),
  },
});
export type Project = InferEntity<typeof ProjectSchema>;
