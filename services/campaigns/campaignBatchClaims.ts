/**
 * Emails a campaign batch records in one statement and hands to the transport at once. Larger
 * than a transactional wave: a campaign's throughput comes from it, and a worker killed mid-batch
 * can repeat only this many (the one wave recorded whose hand-over is not known). Also how many
 * of a batch's emails recorded claimed by the per-email claims of earlier releases may have been
 * handed over without a row saying so: the end of a send withdraws only the ones after them
 * (campaignSendRepository.withdrawUnsentClaims).
 */
export const CAMPAIGN_WAVE = 25;

/** A batch's key in campaign_batch_claims: where it starts in the audience (its claim names the attempt that owns it). */
export const campaignBatchKey = (afterContactId: string | null) => afterContactId ?? 'start';

/**
 * A LIKE pattern matching the per-email claim owner (emails.claimed_by) of every batch of the
 * campaign, as batches before the claim per batch recorded them (`campaign-<id>/<start>`; a uuid
 * holds no wildcard): the end of a send still withdraws what such a batch left claimed.
 */
export const campaignBatchOwners = (campaignId: string) => `campaign-${campaignId}/%`;
