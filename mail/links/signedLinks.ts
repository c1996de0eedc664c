import { hmacBase64Url, timingSafeEqualStrings } from '../../lib/crypto';

/**
 * Every link Mailroom puts in mail (contract section 9): the open pixel, click redirects and the
 * unsubscribe / subscribe / manage pages. Each carries an id and an HMAC of it under SECRET, so
 * links cannot be forged or pointed at another email or contact, and nothing needs storing.
 * Tokens are `<id>.<mac>`; a click also signs its target URL, so the redirect cannot be turned
 * into an open redirect.
 */
export type LinkPurpose = 'open' | 'click' | 'contact';

const tokenPattern = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{16,64})$/;

/** A short MAC (128 bits) keeps links readable; it is plenty against forgery. */
function mac(secret: string, purpose: LinkPurpose, value: string): string {
  return hmacBase64Url(secret, `mailroom-link:${purpose}:${value}`).slice(0, 22);
}

export function signLinkToken(secret: string, purpose: LinkPurpose, id: string): string {
  return `${id}.${mac(secret, purpose, id)}`;
}

/** The id a token carries, or null when the token is malformed or its MAC does not match. */
export function openLinkToken(secret: string, purpose: LinkPurpose, token: string): string | null {
  const match = tokenPattern.exec(token);
  if (!match) return null;
  return timingSafeEqualStrings(match[2], mac(secret, purpose, match[1])) ? match[1] : null;
}

export function clickSignature(secret: string, emailId: string, url: string): string {
  return mac(secret, 'click', `${emailId}\n${url}`);
}

export function verifyClickSignature(secret: string, emailId: string, url: string, signature: string): boolean {
  return timingSafeEqualStrings(signature, clickSignature(secret, emailId, url));
}

/** The URLs one email's rendering needs, built from PUBLIC_URL. */
export interface EmailLinks {
  openPixelUrl: string;
  /** `${clickBase}?url=${encodeURIComponent(target)}&sig=${clickSignature(target)}`. */
  clickUrl(target: string): string;
  /** The click redirect of this email, before its query. */
  clickBase: string;
  clickSignature(target: string): string;
  unsubscribeUrl: string;
  subscribeUrl: string;
  manageUrl: string;
  /** The signed contact token the three pages end with: the only part of them that differs between recipients. */
  contactToken: string;
}

export function emailLinks(publicUrl: string, secret: string, ids: { emailId: string; contactId: string }): EmailLinks {
  const contactToken = signLinkToken(secret, 'contact', ids.contactId);
  const emailToken = signLinkToken(secret, 'open', ids.emailId);
  const clickBase = `${publicUrl}/t/c/${ids.emailId}`;
  const signClick = (target: string) => clickSignature(secret, ids.emailId, target);
  return {
    openPixelUrl: `${publicUrl}/t/o/${emailToken}.gif`,
    clickUrl: (target) => `${clickBase}?url=${encodeURIComponent(target)}&sig=${signClick(target)}`,
    clickBase,
    clickSignature: signClick,
    unsubscribeUrl: `${publicUrl}/unsubscribe/${contactToken}`,
    subscribeUrl: `${publicUrl}/subscribe/${contactToken}`,
    manageUrl: `${publicUrl}/manage/${contactToken}`,
    contactToken,
  };
}
