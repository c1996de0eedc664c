import { z } from 'zod';
import { OUTBOX_SENDER_DOMAIN, isOutboxSenderDomainName, parseDomainName } from '../../lib/domainName';

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
      if (isOutboxSenderDomainName(parsed.domain)) {
        ctx.addIssue({
          code: 'custom',
          message: `${OUTBOX_SENDER_DOMAIN} is Mailroom's built-in sender of the local outbox: it needs no verification, and cannot be added`,
        });
        return z.NEVER;
      }
      return parsed.domain;
    }),
});
