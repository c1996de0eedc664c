import dns from 'node:dns';
import { isIP } from 'node:net';

/**
 * The one way Mailroom asks DNS anything (domain verification, the background re-check, and
 * /v1/verify's MX lookups). It honours DNS_SERVERS and sorts failures into two kinds a caller
 * must treat differently:
 *
 * - the name has no such record (NXDOMAIN, NODATA): an empty answer, a fact about the domain;
 * - the question could not be answered now (SERVFAIL, timeout, refused, unreachable server):
 *   a DnsTemporaryFailure, which says nothing about the domain and must not change what we
 *   believe about it.
 *
 * c-ares (node's resolver) answers ENOTFOUND both for NXDOMAIN and when it could not reach any
 * server at all (a DNS_SERVERS address with no route, e.g. EHOSTUNREACH or ENETUNREACH): such an
 * outage would read as "no such record" and un-verify every domain. So an ENOTFOUND counts as
 * NXDOMAIN only once the same servers have answered a question every recursive resolver answers
 * (the root's NS records, see ROOT_PROBE); otherwise it is a DnsTemporaryFailure (EUNREACHABLE).
 * ENODATA (NODATA) needs no such proof: c-ares reports it only from an answer it received.
 */
export class DnsTemporaryFailure extends Error {
  constructor(
    readonly hostname: string,
    readonly rrtype: string,
    /** The resolver's error code, e.g. ESERVFAIL, ETIMEOUT, ECONNREFUSED. */
    readonly code: string,
  ) {
    super(`DNS lookup of ${rrtype} ${hostname} failed temporarily (${code})`);
    this.name = 'DnsTemporaryFailure';
  }
}

export interface MxRecord {
  exchange: string;
  priority: number;
}

export interface DnsResolver {
  /** TXT records, each record's character strings joined into one string (as DKIM and SPF read them). */
  txt(hostname: string): Promise<string[]>;
  /** MX records, lowest priority first. */
  mx(hostname: string): Promise<MxRecord[]>;
  a(hostname: string): Promise<string[]>;
  aaaa(hostname: string): Promise<string[]>;
  ns(hostname: string): Promise<string[]>;
  /** The servers asked, as `ip:port` / `[ipv6]:port`; empty means the system's resolvers. */
  readonly servers: string[];
}

export interface DnsResolverOptions {
  /** DNS_SERVERS, already parsed; empty uses the system's resolvers (/etc/resolv.conf). */
  servers: string[];
  /** Per-try timeout (DNS_TIMEOUT_MS). */
  timeoutMs: number;
  /** Tries per server before giving up. */
  tries?: number;
}

/** Answers that mean "this name has no such record": the domain's own statement, not a failure. */
const emptyAnswerCodes = new Set<string>([dns.NODATA, dns.NOTFOUND, 'ENOTFOUND', 'ENODATA']);
/** The code c-ares gives NXDOMAIN, and also a query no server could be reached for. */
const notFoundCodes = new Set<string>([dns.NOTFOUND, 'ENOTFOUND']);
/** The code of a DnsTemporaryFailure for a not-found that the servers could not be shown to have answered. */
export const UNREACHABLE_CODE = 'EUNREACHABLE';
/** The question that proves the servers answer: a resolver knows the root's nameservers. */
const ROOT_PROBE = '.';
/** A name that cannot exist cannot have records either (our names are validated, so this is rare). */
const impossibleNameCodes = new Set<string>([dns.BADNAME, dns.BADFAMILY]);

export function createDnsResolver(options: DnsResolverOptions): DnsResolver {
  const resolver = new dns.promises.Resolver({ timeout: options.timeoutMs, tries: options.tries ?? 2 });
  if (options.servers.length) resolver.setServers(options.servers);

  /** Whether the servers answer at all: the root's NS records, asked after the not-found they must vouch for. */
  async function serversAnswer(): Promise<boolean> {
    try {
      return (await resolver.resolveNs(ROOT_PROBE)).length > 0;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === dns.NODATA || (err as NodeJS.ErrnoException).code === 'ENODATA';
    }
  }

  async function ask<T>(rrtype: string, hostname: string, query: () => Promise<T[]>): Promise<T[]> {
    try {
      return await query();
    } catch (err) {
      const code = String((err as NodeJS.ErrnoException).code ?? 'EUNKNOWN');
      if (notFoundCodes.has(code) && !(await serversAnswer())) throw new DnsTemporaryFailure(hostname, rrtype, UNREACHABLE_CODE);
      if (emptyAnswerCodes.has(code) || impossibleNameCodes.has(code)) return [];
      throw new DnsTemporaryFailure(hostname, rrtype, code);
    }
  }

  return {
    servers: options.servers,
    txt: (hostname) => ask('TXT', hostname, async () => (await resolver.resolveTxt(hostname)).map((chunks) => chunks.join(''))),
    mx: (hostname) => ask('MX', hostname, async () => (await resolver.resolveMx(hostname)).sort((x, y) => x.priority - y.priority)),
    a: (hostname) => ask('A', hostname, () => resolver.resolve4(hostname)),
    aaaa: (hostname) => ask('AAAA', hostname, () => resolver.resolve6(hostname)),
    ns: (hostname) => ask('NS', hostname, () => resolver.resolveNs(hostname)),
  };
}

/** The resolver configured by DNS_SERVERS and DNS_TIMEOUT_MS: what the API and the activities use. */
/** The two settings of lib/config.ts the resolver reads. */
export interface DnsSettings {
  dnsServers: string[];
  dnsTimeoutMs: number;
}

export function dnsResolverFromConfig(config: DnsSettings): DnsResolver {
  return createDnsResolver({ servers: config.dnsServers, timeoutMs: config.dnsTimeoutMs });
}

/**
 * Parses DNS_SERVERS: comma-separated `ip`, `ip:port`, `ipv6` or `[ipv6]:port`. Returns the
 * entries in the form node's Resolver.setServers takes, or the first entry it cannot read.
 */
export function parseDnsServers(value: string | undefined): { servers: string[] } | { invalid: string } {
  const servers: string[] = [];
  for (const raw of (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const server = normaliseServer(raw);
    if (!server) return { invalid: raw };
    servers.push(server);
  }
  return { servers };
}

function normaliseServer(entry: string): string | undefined {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
  if (bracketed) {
    const [, ip, port] = bracketed;
    if (isIP(ip) !== 6 || !validPort(port)) return undefined;
    return port ? `[${ip}]:${port}` : ip;
  }
  if (isIP(entry) === 6) return entry;
  const v4 = /^([^:]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!v4 || isIP(v4[1]) !== 4 || !validPort(v4[2])) return undefined;
  return v4[2] ? `${v4[1]}:${v4[2]}` : v4[1];
}

function validPort(port: string | undefined): boolean {
  return port === undefined || (Number(port) >= 1 && Number(port) <= 65535);
}
