import type { DnsResolver } from './dnsResolver';

export interface DnsCacheOptions {
  /** How long an answer (records or none) is reused. */
  ttlMs: number;
  /** Answers kept at most; the oldest go first. */
  maxEntries: number;
}

/**
 * A resolver that reuses answers for `ttlMs`, and asks a question once while it is in flight.
 * For receiving mail (SPF, DKIM and DMARC of every message): the same few sender domains are asked
 * about again and again, five questions a message, as a receiving MTA's caching resolver would
 * answer from its cache. A temporary failure is never kept: the next message asks again.
 * Not for domain verification, which must see a record the moment the user publishes it.
 */
export function cachingDnsResolver(inner: DnsResolver, options: DnsCacheOptions): DnsResolver {
  const cache = new Map<string, { until: number; answer: Promise<unknown[]> }>();

  function cached<T>(rrtype: string, hostname: string, ask: (hostname: string) => Promise<T[]>): Promise<T[]> {
    const key = `${rrtype} ${hostname.toLowerCase()}`;
    const now = Date.now();
    const hit = cache.get(key);
    if (hit && hit.until > now) return hit.answer as Promise<T[]>;
    if (hit) cache.delete(key);
    const answer = ask(hostname);
    cache.set(key, { until: now + options.ttlMs, answer });
    if (cache.size > options.maxEntries) cache.delete(cache.keys().next().value as string);
    // A failure is the caller's to handle now, and not an answer to keep.
    answer.catch(() => {
      if (cache.get(key)?.answer === answer) cache.delete(key);
    });
    return answer;
  }

  return {
    servers: inner.servers,
    txt: (hostname) => cached('TXT', hostname, (name) => inner.txt(name)),
    mx: (hostname) => cached('MX', hostname, (name) => inner.mx(name)),
    a: (hostname) => cached('A', hostname, (name) => inner.a(name)),
    aaaa: (hostname) => cached('AAAA', hostname, (name) => inner.aaaa(name)),
    ns: (hostname) => cached('NS', hostname, (name) => inner.ns(name)),
  };
}
