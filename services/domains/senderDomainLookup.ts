import type { Orm } from '../../db/orm';
import type { MailTransport } from '../../mail/mailTransport';
import { CoalescedLookup } from '../../lib/coalescedLookup';
import { OUTBOX_SENDER_DOMAIN, isOutboxSenderAddress } from '../../lib/domainName';
import { domainRepository, type DomainRow } from '../../db/domains/domainRepository';
import { ApiError } from '../../lib/errors';

/** Where mail goes: a relay (SMTP_URL set) or the local outbox. */
export type MailMode = MailTransport['kind'];

export function mailModeOf(config: { smtpUrl?: string }): MailMode {
  // The same test as createMailTransport's, so the API and the worker's transport agree.
  return config.smtpUrl ? 'smtp' : 'outbox';
}

/** A domain a project may send from now. */
export interface SenderDomain {
  /** The domain named in Message-IDs: the verified domain covering the address, or the outbox sender domain. */
  domain: string;
  /** The verified domain's row (its DKIM key); null for the outbox sender domain, which has neither row nor key. */
  row: DomainRow | null;
}

/**
 * The sender-domain rule's statement, already run for this request by another lookup (the API-key
 * lookup of POST /v1/send reads it in its own statement, db/repositories/apiKeyResolver.ts): the
 * sender address's domain it was asked for, and the verified domain it found (null: none).
 */
export interface CheckedSenderDomain {
  fromDomain: string;
  row: DomainRow | null;
}

/** The lower-case domain of an address, as the lookups compare it; null without an `@`. */
export function senderAddressDomain(fromAddress: string): string | null {
  const at = fromAddress.lastIndexOf('@');
  return at < 0 ? null : fromAddress.slice(at + 1).toLowerCase();
}

export type OutboxSenderVerdict = { allowed: true } | { allowed: false; reason: string };

/**
 * Mailroom's one exception to the sender-domain rule (contract 8), written here only: any project
 * may send from OUTBOX_SENDER_DOMAIN without DNS while mail goes only to the local outbox, and
 * never once it goes to a relay. The API asks it when mail is accepted (with SMTP_URL of its own
 * config) and delivery asks it again with the transport in hand, so mail accepted in outbox mode
 * and still queued when SMTP_URL is set fails rather than leaves the machine. Null when the
 * address is not on that domain: the ordinary rule decides.
 */
export function outboxSenderRule(fromAddress: string, mode: MailMode): OutboxSenderVerdict | null {
  if (!isOutboxSenderAddress(fromAddress)) return null;
  if (mode === 'outbox') return { allowed: true };
  return {
    allowed: false,
    reason: `${OUTBOX_SENDER_DOMAIN} sends only into the local outbox, and SMTP_URL is set: send from a verified domain of the project`,
  };
}

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

/**
 * The sender-domain rule on the send path: the outbox exception above, else
 * `domainRepository.findVerifiedSenderDomain`, with the concurrent sends of one project from one
 * domain sharing a statement (lib/coalescedLookup.ts). No answer is kept after its statement, so
 * a domain that stops being verified is refused at once. Every API path that checks a sender
 * (send, templates, campaigns, the SMTP relay) asks this, so the exception is the same for all.
 */
export class SenderDomainLookup {
  private readonly lookup: CoalescedLookup<DomainRow | null>;

  constructor(
    orm: Orm,
    private readonly mode: MailMode,
  ) {
    this.lookup = new CoalescedLookup((key) => {
      const [projectId, fromDomain] = key.split('\u0000');
      return domainRepository.findVerifiedSenderDomain(orm.em.fork(), projectId, `sender@${fromDomain}`);
    });
  }

  /**
   * The domain `fromAddress` may be sent from for the project, or null (the caller answers
   * `unverifiedSenderDomain`). `checked`: this request's answer already read with its API key,
   * used when it was asked for the same domain (it too was read after the request arrived).
   */
  async findVerified(projectId: string, fromAddress: string, checked?: CheckedSenderDomain): Promise<SenderDomain | null> {
    const outbox = outboxSenderRule(fromAddress, this.mode);
    if (outbox) return outbox.allowed ? { domain: OUTBOX_SENDER_DOMAIN, row: null } : null;
    const fromDomain = senderAddressDomain(fromAddress);
    if (fromDomain === null) return null;
    const row = checked?.fromDomain === fromDomain ? checked.row : await this.lookup.get(`${projectId}\u0000${fromDomain}`);
    return row ? { domain: row.domain, row } : null;
  }
}
