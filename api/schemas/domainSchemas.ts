import { z } from './zod';
import { id, nullableTimestamp, timestamp } from './responseFields';
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

// Responses.

/** A DNS record the domain's owner is asked to add, with what the last check found. */
const dnsRecord = z
  .object({
    type: z.enum(['TXT', 'MX']),
    name: z.string(),
    value: z.string(),
    purpose: z.enum(['DKIM', 'SPF', 'DMARC', 'INBOUND', 'RETURN_PATH']),
    verified: z.boolean().describe('Found as asked at the last check; always false for the mail-in records (INBOUND, RETURN_PATH), which are not looked up'),
  })
  .strict()
  .openapi('DomainDnsRecord');

const domainShape = {
  id,
  domain: z.string(),
  status: z.enum(['PENDING', 'VERIFIED', 'FAILED']),
  verified: z.boolean(),
  records: z.array(dnsRecord),
  lastCheckedAt: nullableTimestamp.describe('The last check that got an answer from DNS'),
  verifiedAt: nullableTimestamp,
  projectId: id,
  createdAt: timestamp,
  updatedAt: timestamp,
};

export const domainResponse = z.object(domainShape).strict().openapi('Domain');

export const domainListResponse = z.array(domainResponse);

/** GET /domains/:id/verify: the record after the check, and whether DNS answered. */
export const domainVerifyResponse = z
  .object({
    ...domainShape,
    check: z
      .object({
        status: z.enum(['CHECKED', 'DNS_UNAVAILABLE']),
        message: z.string().nullable(),
      })
      .strict(),
  })
  .strict()
  .openapi('DomainCheck');
