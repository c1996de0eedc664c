/**
 * How many emails one delivery workflow may carry, on its own: it imports nothing, so every
 * starter (the API's scheduler, the delivery sweep's grouping, the workflows) cuts its emails
 * by the same rule without an import cycle. deliveryWorkflowStart.ts checks it on every start.
 */

/**
 * Temporal refuses a start whose search attribute value passes `limit.searchAttributeValueSize`:
 * 2,048 bytes by default (and on Temporal Cloud), counted on the value's JSON.
 */
export const SEARCH_ATTRIBUTE_VALUE_MAX_BYTES = 2048;

/**
 * The most emails one delivery workflow carries, so that its `EmailIds` search attribute (every
 * one of its email ids, what `EmailIds = "<id>"` finds) always fits: `["<uuid>","<uuid>",...]`
 * takes 39 bytes an id (36 characters, two quotes, a comma) plus 1, so 52 ids (2,029 bytes) fit
 * and 53 (2,068 bytes, which Temporal refuses) do not. 50 (1,951 bytes) leaves a margin.
 */
export const MAX_EMAILS_PER_DELIVERY = 50;

/** Email ids cut, in order, into runs of at most MAX_EMAILS_PER_DELIVERY: one delivery workflow each. */
export function deliveryChunks(emailIds: string[]): string[][] {
  const chunks: string[][] = [];
  for (let i = 0; i < emailIds.length; i += MAX_EMAILS_PER_DELIVERY) chunks.push(emailIds.slice(i, i + MAX_EMAILS_PER_DELIVERY));
  return chunks;
}
