import { disposableEmailBlocklist } from 'disposable-email-domains-js';
import { freeEmailDomains } from 'free-email-domains-typescript';
import { aliasDomains } from './aliasDomains';

/**
 * The domain lists /v1/verify checks against, all shipped inside npm packages (nothing is
 * fetched at run time; updating a list is updating its package):
 *
 * - disposable: `disposable-email-domains-js`, a weekly republication of the community
 *   disposable-email-domains blocklist, which only lists domains that hand out throwaway inboxes;
 * - free-mail (personal) providers: `free-email-domains-typescript`, HubSpot's list of free email
 *   providers, plus the few newer providers it lacks (below);
 * - forwarding (alias) services: ./aliasDomains.ts.
 *
 * Loaded once per process: the disposable list alone is about 9,000 names.
 */
const disposable: ReadonlySet<string> = new Set(disposableEmailBlocklist());

/** Personal-mail providers missing from HubSpot's list (checked November 2026). */
const personalSupplement = ['proton.me', 'pm.me', 'tuta.com', 'tuta.io', 'tutanota.de', 'tutamail.com', 'hey.com', 'mailbox.org', 'disroot.org'];
const personal: ReadonlySet<string> = new Set([...freeEmailDomains, ...personalSupplement]);

/** The domain and each parent of two labels or more: a service's subdomains are the service's. */
function selfAndParents(domain: string): string[] {
  const labels = domain.split('.');
  const names: string[] = [];
  for (let i = 0; i <= labels.length - 2; i++) names.push(labels.slice(i).join('.'));
  return names;
}

/** `domain` is lower-case ASCII (punycode), as parseEmailAddress gives it. */
export function isDisposableDomain(domain: string): boolean {
  return selfAndParents(domain).some((name) => disposable.has(name));
}

export function isAliasDomain(domain: string): boolean {
  return selfAndParents(domain).some((name) => aliasDomains.has(name));
}

/** Only the provider's own domain: a subdomain of gmail.com is not a Gmail mailbox. */
export function isFreeMailDomain(domain: string): boolean {
  return personal.has(domain);
}
