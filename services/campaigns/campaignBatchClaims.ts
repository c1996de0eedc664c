/**
 * Emails a campaign batch hands to the transport at once. Larger than a transactional wave: a
 * campaign's throughput comes from it, and a worker killed mid-batch can repeat only this many.
 * It is also how many of a batch's emails recorded already claimed may have been handed over
 * without a row saying so (the wave in flight): the end of a send withdraws only the ones after
 * them (campaignSendRepository.withdrawUnsentClaims).
 */
export const CAMPAIGN_WAVE = 25;

/**
 * The claim owner of a campaign batch: derived from the batch itself (its campaign and where it
 * starts), so the batch records its emails claimed under the owner its delivery uses, and a
 * retried attempt (on any worker) takes over its own claims at once.
 */
export const campaignBatchOwner = (campaignId: string, afterContactId: string | null) => `campaign-${campaignId}/${afterContactId ?? 'start'}`;

/** A LIKE pattern matching the owner of every batch of the campaign (a uuid holds no wildcard). */
export const campaignBatchOwners = (campaignId: string) => `campaign-${campaignId}/%`;
