import type { DnsResolver } from '../dns/dnsResolver';
import { parseEmailAddress } from './emailAddressSyntax';
import { isAliasDomain, isDisposableDomain, isFreeMailDomain } from './domainLists';
import { suggestDomain } from './typoSuggestion';
import { lookUpMailDomain } from './mailDomainDns';

/** The specification's "Email verification result", plus `suggestedEmail` when `isTypo` (contract 13). */
export interface EmailVerificationResult {
  email: string;
  valid: boolean;
  isDisposable: boolean;
  isAlias: boolean;
  isTypo: boolean;
  isPlusAddressed: boolean;
  isPersonalEmail: boolean;
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  reasons: string[];
  suggestedEmail?: string;
}

const allClear = 'Email appears to be valid';

/**
 * Checks one address (contract section 13). `valid` is false only for a malformed address, a
 * domain without nameservers or a domain without MX records; every finding, those and the
 * informative ones (disposable, alias, typo, plus addressing, a failed lookup), adds a reason.
 * Being at a free-mail provider or having no website is a property, not a finding, so it adds
 * none. A malformed address is not looked up: every flag is false and the one reason says why.
 *
 * `email` in the result is the address trimmed and lower-cased, as Mailroom stores addresses.
 */
export async function verifyEmailAddress(dns: DnsResolver, input: string): Promise<EmailVerificationResult> {
  const parsed = parseEmailAddress(input);
  const email = parsed.address;
  if (!parsed.ok) {
    return {
      email,
      valid: false,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      isPersonalEmail: false,
      domainExists: false,
      hasWebsite: false,
      hasMxRecords: false,
      reasons: [parsed.reason],
    };
  }

  const { localPart, domain } = parsed;
  const lookup = lookUpMailDomain(dns, domain);
  const isDisposable = isDisposableDomain(domain);
  const isAlias = isAliasDomain(domain);
  const isFreeMail = isFreeMailDomain(domain);
  const suggestion = suggestDomain(domain, (name) => isFreeMailDomain(name) || isAliasDomain(name));
  const isPlusAddressed = localPart.includes('+');
  const found = await lookup;

  const reasons: string[] = [];
  const failed = (what: string) => found.failures.find((f) => f.what === what);
  const nsFailure = failed('nameservers');
  if (nsFailure)
    reasons.push(`Could not look up the nameservers of ${domain} (DNS lookup failed: ${nsFailure.code}), so the domain is reported as not existing`);
  else if (!found.domainExists) reasons.push(`The domain ${domain} does not exist (it has no nameservers)`);
  const mxFailure = failed('MX records');
  if (mxFailure) reasons.push(`Could not look up the MX records of ${domain} (DNS lookup failed: ${mxFailure.code}), so it is reported as having none`);
  else if (found.nullMx) reasons.push(`The domain ${domain} declares that it accepts no email (null MX record)`);
  else if (!found.hasMxRecords) reasons.push(`The domain ${domain} has no MX records, so it cannot receive email`);
  const addressFailure = failed('A/AAAA records');
  if (addressFailure) reasons.push(`Could not look up the website (A/AAAA records) of ${domain} (DNS lookup failed: ${addressFailure.code})`);
  if (isDisposable) reasons.push(`The domain ${domain} belongs to a disposable (temporary) email service`);
  if (isAlias) reasons.push(`The domain ${domain} belongs to an email forwarding (alias) service`);
  if (suggestion) reasons.push(`The domain ${domain} looks like a typo: did you mean ${localPart}@${suggestion}?`);
  if (isPlusAddressed) reasons.push('The address uses plus addressing (a +tag in the part before the @)');

  const result: EmailVerificationResult = {
    email,
    valid: found.domainExists && found.hasMxRecords,
    isDisposable,
    isAlias,
    isTypo: suggestion !== undefined,
    isPlusAddressed,
    // A forwarding address stands for a person's own mailbox as much as a free-mail one does.
    isPersonalEmail: isFreeMail || isAlias,
    domainExists: found.domainExists,
    hasWebsite: found.hasWebsite,
    hasMxRecords: found.hasMxRecords,
    reasons: reasons.length ? reasons : [allClear],
  };
  if (suggestion) result.suggestedEmail = `${localPart}@${suggestion}`;
  return result;
}
