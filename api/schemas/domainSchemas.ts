import { z } from 'zod';
import { parseDomainName } from '../../lib/domainName';

export const createDomainBody = z.object({
  domain: z
    .string({ required_error: 'Domain is required', invalid_type_error: 'Domain must be a string' })
    .max(300, 'A domain name is at most 253 characters')
    .transform((value, ctx) => {
      const parsed = parseDomainName(value);
      if ('error' in parsed) {
        ctx.addIssue({ code: 'custom', message: parsed.error });
        return z.NEVER;
      }
      return parsed.domain;
    }),
});
