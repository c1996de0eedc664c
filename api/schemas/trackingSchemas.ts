import { z } from 'zod';

/**
 * GET /t/c/:emailId: the target and its signature, as the link carries them. A query that does not
 * fit (either missing, empty or repeated) is a damaged link: the handler answers its 400 page.
 */
export const clickQuery = z.object({
  url: z.string().min(1).describe('The target URL, as the signature covers it'),
  sig: z.string().describe('The link’s signature over the email id and the URL'),
});
