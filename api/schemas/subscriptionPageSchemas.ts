import { z } from 'zod';

/**
 * What a POST to the subscription pages may carry: a mail client's RFC 8058 one-click POST sends
 * `List-Unsubscribe=One-Click`, the page's own form sends nothing. The body is only read (within
 * 8 KiB) and ignored: the signed token in the path is the whole request, so this schema describes
 * the body rather than checking it.
 */
export const subscriptionPageForm = z.object({
  'List-Unsubscribe': z.literal('One-Click').optional(),
});
