import { run as suggestEmail } from '@zootools/email-spell-checker';

/**
 * Spelling suggestions for the domain of an address (gmial.com → gmail.com), with
 * `@zootools/email-spell-checker` doing the matching. Its defaults are tuned to catch much and
 * misfire often (any domain within two edits of a provider, partial fixes of the second-level
 * name or the TLD alone: acme.com → aim.com, mozmail.com → hotmail.com, example.test →
 * example.tech). A verification result that calls a real address a typo is worse than one that
 * misses a typo, so it runs narrower here:
 *
 * - only whole-domain matches, against the big consumer providers below whose name before the
 *   TLD has at least five characters (one edit away from aol.com or me.com lie countless real
 *   company domains);
 * - one edit at most (a wrong, missing, extra or swapped character: Damerau distance 1);
 * - never for a domain that is itself a known provider or forwarding service: those lists hold
 *   real neighbours of the targets (email.com, hotmail.fi, yahoo.gr, y7mail.com, mozmail.com).
 *   Disposable domains are not exempt: gmial.com and hotmial.com are typo traps on that list.
 */
const targets = [
  'gmail.com',
  'googlemail.com',
  'yahoo.com',
  'yahoo.co.uk',
  'yahoo.fr',
  'yahoo.de',
  'ymail.com',
  'rocketmail.com',
  'hotmail.com',
  'hotmail.co.uk',
  'hotmail.fr',
  'hotmail.de',
  'hotmail.it',
  'outlook.com',
  'outlook.fr',
  'outlook.de',
  'icloud.com',
  'protonmail.com',
  'proton.me',
  'yandex.com',
  'yandex.ru',
  'comcast.net',
  'verizon.net',
  'sbcglobal.net',
  'bellsouth.net',
  'earthlink.net',
  'btinternet.com',
  'optonline.net',
  'charter.net',
  'rogers.com',
  'sympatico.ca',
  'orange.fr',
  't-online.de',
  'libero.it',
  'laposte.net',
];
const targetSet = new Set(targets);

/** Optimal string alignment distance (Levenshtein plus swaps of neighbours). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 0; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      rows[i][j] = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) rows[i][j] = Math.min(rows[i][j], rows[i - 2][j - 2] + 1);
    }
  }
  return rows[a.length][b.length];
}

/**
 * The provider domain `domain` looks like a misspelling of, if any. `domain` is lower-case ASCII;
 * `isKnownDomain` says whether it is on a provider or forwarding list (see above).
 */
export function suggestDomain(domain: string, isKnownDomain: (domain: string) => boolean): string | undefined {
  if (targetSet.has(domain) || isKnownDomain(domain)) return undefined;
  // Domains longer than any target by more than one character cannot be one edit away; this also
  // keeps the quadratic distance off 250-character names.
  if (domain.length > 20) return undefined;
  const suggestion = suggestEmail({
    email: `x@${domain}`,
    domains: targets,
    domainThreshold: 1,
    distanceFunction: editDistance,
    // Empty lists switch off the partial (second-level or TLD only) corrections.
    secondLevelDomains: [],
    topLevelDomains: [],
  });
  return suggestion && targetSet.has(suggestion.domain) ? suggestion.domain : undefined;
}
