import type { AuthenticateResult } from 'mailauth';
import type { DnsResolver } from '../../lib/dns/dnsResolver';
import { DnsTemporaryFailure } from '../../lib/dns/dnsResolver';
import type { InboundAuthResults } from '../../db/emails/emailRepository';
import type { InboundEnvelope, ProviderVerdicts } from '../../db/inbound/inboundMessageRepository';

const VERDICTS = new Set(['pass', 'fail', 'softfail', 'neutral', 'none', 'temperror', 'permerror']);

/** mailauth's words folded into contract 20's seven: `temperr` is temperror, `policy`/`skipped` are neutral/none. */
function verdict(result: string | undefined | false): string {
  if (!result) return 'none';
  if (result === 'temperr') return 'temperror';
  if (result === 'policy') return 'neutral';
  if (result === 'skipped') return 'none';
  return VERDICTS.has(result) ? result : 'neutral';
}

function dnsError(code: string): Error {
  return Object.assign(new Error(`DNS ${code}`), { code });
}

/**
 * mailauth asks DNS as `dns.promises.resolve` would answer, through the one resolver
 * (lib/dns/dnsResolver.ts, DNS_SERVERS): an empty answer is ENODATA, a temporary failure keeps
 * its code, so SPF and DMARC tell `none` from `temperror` as the resolver does.
 */
function mailauthResolver(dns: DnsResolver) {
  return async (name: string, rrtype: string): Promise<any> => {
    let answer: unknown[];
    try {
      switch (rrtype.toUpperCase()) {
        case 'TXT':
          answer = (await dns.txt(name)).map((record) => [record]);
          break;
        case 'MX':
          answer = await dns.mx(name);
          break;
        case 'A':
          answer = await dns.a(name);
          break;
        case 'AAAA':
          answer = await dns.aaaa(name);
          break;
        case 'NS':
          answer = await dns.ns(name);
          break;
        default:
          // PTR and the like: the resolver does not ask them, and SPF treats a missing answer as no match.
          throw dnsError('ENOTFOUND');
      }
    } catch (err) {
      if (err instanceof DnsTemporaryFailure) throw dnsError(err.code === 'EUNREACHABLE' ? 'ETIMEOUT' : err.code);
      throw err;
    }
    if (!answer.length) throw dnsError('ENODATA');
    return answer;
  };
}

/**
 * SPF (the client's address, HELO and MAIL FROM), DKIM and DMARC of a received message, as
 * mailauth computes them. Never throws: a failure of the check itself is `temperror`.
 */
export async function authenticateMessage(raw: Buffer, envelope: InboundEnvelope, dns: DnsResolver, mta: string): Promise<InboundAuthResults> {
  // Loaded on the first received message: mailauth and what it loads hold ~11 MiB of the worker's
  // (and the API's) resident memory, which a process that never receives mail need not carry.
  const { authenticate } = await import('mailauth');
  let result: AuthenticateResult;
  try {
    result = await authenticate(raw, {
      ip: envelope.remoteAddress.replace(/^::ffff:/, ''),
      helo: envelope.helo,
      sender: envelope.mailFrom,
      mta,
      resolver: mailauthResolver(dns),
      disableArc: true,
      disableBimi: true,
    });
  } catch {
    return { spf: 'temperror', dkim: 'temperror', dmarc: 'temperror' };
  }
  const dkimResults = result.dkim?.results ?? [];
  // One verdict for all signatures: a passing one is what DMARC and a reader care about.
  const dkim = dkimResults.some((r) => r.status?.result === 'pass') ? 'pass' : verdict(dkimResults[0]?.status?.result);
  return {
    spf: verdict(result.spf ? result.spf.status?.result : false),
    dkim,
    dmarc: verdict(result.dmarc ? result.dmarc.status?.result : false),
  };
}

/** SES's words (PASS, FAIL, GRAY: no record or signature, PROCESSING_FAILED), lower-cased, in contract 20's seven. */
const SES_VERDICTS: Record<string, string> = { pass: 'pass', fail: 'fail', gray: 'none', processing_failed: 'temperror' };

/**
 * The verdicts of a message a provider received: SES checked SPF against the client it spoke
 * with, which only it saw (the notice names no address), and DKIM and DMARC along with it.
 * Checking again here would judge SPF without the client's address; SES's own verdicts are the
 * ones made with it. A verdict SES did not give, or one it has no word for here, is `none`.
 */
export function providerAuthResults(verdicts: ProviderVerdicts): InboundAuthResults {
  const word = (value: string | undefined) => (value && SES_VERDICTS[value]) || 'none';
  return { spf: word(verdicts.spf), dkim: word(verdicts.dkim), dmarc: word(verdicts.dmarc) };
}
