import { ApiError } from '../../lib/errors';

/**
 * The sender-domain rule's refusal (contract sections 2 and 8): 403 with the code
 * INTERNAL_SERVER_ERROR, a quirk the specification keeps, and a message naming the domain.
 */
export function unverifiedSenderDomain(fromAddress: string): ApiError {
  const domain = fromAddress.slice(fromAddress.lastIndexOf('@') + 1).toLowerCase();
  return new ApiError(
    403,
    'INTERNAL_SERVER_ERROR',
    `The domain ${domain} is not verified for this project: add it with POST /domains and verify it before sending from ${fromAddress}`,
    { details: { domain }, suggestion: `Publish the DNS records POST /domains gives for ${domain}, then call GET /domains/:id/verify` },
  );
}
