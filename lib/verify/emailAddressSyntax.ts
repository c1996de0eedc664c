import { parseDomainName } from '../domainName';

/**
 * Whether a string is an email address Mailroom can check, and its parts. The rules are RFC 5321
 * and 5322's dot-atom form (quoted local parts and IP-literal domains are refused: no mailbox
 * provider hands those out), an internationalised domain is checked in its ASCII (punycode) form,
 * and a non-ASCII local part (RFC 6531) is refused, since delivering to one needs SMTPUTF8 on
 * every hop. Surrounding spaces are trimmed and the address lower-cased, as Mailroom stores
 * addresses; control characters (CR, LF…) are refused wherever they stand, not trimmed away.
 */
export type ParsedEmailAddress = { ok: true; address: string; localPart: string; domain: string } | { ok: false; address: string; reason: string };

/** RFC 5322 atext: what a dot-atom local part may hold between its dots. */
const atom = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+$/;

export function parseEmailAddress(input: string): ParsedEmailAddress {
  const address = input.trim().toLowerCase();
  // A malformed address is answered as it came, so the caller sees exactly what was refused.
  const bad = (why: string) => ({ ok: false as const, address: input, reason: `Email address is malformed: ${why}` });
  if (/[\u0000-\u001f\u007f]/.test(input)) return bad('it contains control characters (such as CR or LF)');
  if (!address) return bad('it is empty');
  if (/\s/.test(address)) return bad('it contains spaces');
  const at = address.lastIndexOf('@');
  if (at < 0) return bad('it has no @');
  if (address.indexOf('@') !== at) return bad('it has more than one @');

  const localPart = address.slice(0, at);
  if (!localPart) return bad('nothing before the @');
  if (localPart.length > 64) return bad('the part before the @ is longer than 64 characters');
  if (/[^\u0000-\u007f]/.test(localPart)) return bad('the part before the @ has non-ASCII characters, which most mail servers cannot deliver to');
  if (localPart.startsWith('.') || localPart.endsWith('.') || localPart.includes('..')) {
    return bad('the part before the @ starts or ends with a dot, or has two dots in a row');
  }
  if (!localPart.split('.').every((part) => atom.test(part))) return bad('the part before the @ has characters an address cannot hold');

  const rawDomain = address.slice(at + 1);
  if (!rawDomain) return bad('nothing after the @');
  if (rawDomain.endsWith('.')) return bad('the domain ends with a dot');
  const parsed = parseDomainName(rawDomain);
  if ('error' in parsed) return bad(`the domain is not valid (${parsed.error})`);
  if (localPart.length + 1 + parsed.domain.length > 254) return bad('it is longer than 254 characters');
  return { ok: true, address, localPart, domain: parsed.domain };
}
