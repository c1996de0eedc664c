import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

/**
 * What counts as a sender domain name, in one place: a real hostname of at least two labels,
 * stored lower-cased, in its ASCII (punycode) form, without a trailing dot. Used by POST /domains
 * and by the sender-domain rule, so `Bücher.example` and `xn--bcher-kva.example` are one domain.
 */
export type DomainNameResult = { domain: string } | { error: string };

const label = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export function parseDomainName(input: string): DomainNameResult {
  let name = input.trim().toLowerCase();
  if (!name) return { error: 'Domain is required' };
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(name) || name.includes('/')) {
    return { error: 'Give the bare domain name (such as example.com), without a scheme or path' };
  }
  if (name.includes('@')) return { error: 'Give a domain name (such as example.com), not an email address' };
  if (name.includes('*')) return { error: 'Wildcard domains are not supported: add each sending domain itself' };
  if (isIP(name) || isIP(name.replace(/^\[|\]$/g, ''))) return { error: 'An IP address is not a domain name' };
  if (/[\s:?#]/.test(name)) return { error: 'A domain name has no spaces, port, query or fragment' };
  if (name.endsWith('.')) name = name.slice(0, -1);

  const ascii = domainToASCII(name);
  if (!ascii) return { error: 'Not a valid domain name' };
  if (ascii.length > 253) return { error: 'A domain name is at most 253 characters' };
  const labels = ascii.split('.');
  if (labels.length < 2) return { error: 'A domain name has at least two labels (such as example.com)' };
  for (const part of labels) {
    if (!part) return { error: 'A domain name has no empty labels (two dots in a row)' };
    if (part.length > 63) return { error: 'Each label of a domain name is at most 63 characters' };
    if (!label.test(part)) return { error: `"${part}" is not a valid label: letters, digits and inner hyphens only` };
  }
  if (/^\d+$/.test(labels[labels.length - 1])) return { error: 'An IP address is not a domain name' };
  return { domain: ascii };
}

/**
 * The domain of an email address and each of its parents of two labels or more, most specific
 * first: `a@mail.eu.example.com` → mail.eu.example.com, eu.example.com, example.com.
 * Empty when the address has no valid domain.
 */
export function senderDomainCandidates(address: string): string[] {
  const at = address.lastIndexOf('@');
  if (at < 0) return [];
  const parsed = parseDomainName(address.slice(at + 1));
  if ('error' in parsed) return [];
  const labels = parsed.domain.split('.');
  const candidates: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) candidates.push(labels.slice(i).join('.'));
  return candidates;
}

/**
 * The sender domain every project may send from, with no DNS, while mail only goes to the local
 * outbox (SMTP_URL unset): a newcomer's first email. Under `.localhost`, a name reserved for this
 * machine (RFC 6761), so it can never be anyone's real domain. Which mode allows it is decided in
 * services/domains/senderDomainLookup.ts (`outboxSenderRule`), nowhere else.
 */
export const OUTBOX_SENDER_DOMAIN = 'outbox.mailroom.localhost';

/** Whether a parsed domain name is the outbox sender domain or under it (POST /domains refuses those). */
export function isOutboxSenderDomainName(domain: string): boolean {
  return domain === OUTBOX_SENDER_DOMAIN || domain.endsWith(`.${OUTBOX_SENDER_DOMAIN}`);
}

/** Whether the address is on the outbox sender domain (or under it, as a verified domain covers its subdomains). */
export function isOutboxSenderAddress(address: string): boolean {
  return senderDomainCandidates(address).includes(OUTBOX_SENDER_DOMAIN);
}
