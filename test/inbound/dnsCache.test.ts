import { createDnsResolver, DnsTemporaryFailure, type DnsResolver } from '../../lib/dns/dnsResolver';
import { cachingDnsResolver } from '../../lib/dns/cachingDnsResolver';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { eventually } from '../support/eventually';

let server: TestDnsServer;
let direct: DnsResolver;

beforeAll(async () => {
  server = await startTestDnsServer();
  direct = createDnsResolver({ servers: [server.address], timeoutMs: 300, tries: 1 });
});
afterAll(() => server.close());

/** The real resolver, counting the questions that reach it. */
function counted(): { resolver: DnsResolver; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    resolver: {
      ...direct,
      txt: (name) => (asked.push(`TXT ${name}`), direct.txt(name)),
      mx: (name) => (asked.push(`MX ${name}`), direct.mx(name)),
    },
  };
}

describe('the DNS cache received mail is authenticated with', () => {
  it('answers a question again from the cache until its time is up, then asks the server', async () => {
    const { resolver, asked } = counted();
    const cache = cachingDnsResolver(resolver, { ttlMs: 400, maxEntries: 100 });
    server.setTxt('spf.cache.example', ['v=spf1 -all']);
    expect(await cache.txt('spf.cache.example')).toEqual(['v=spf1 -all']);
    server.setTxt('spf.cache.example', ['v=spf1 +all']);
    expect(await cache.txt('SPF.cache.example')).toEqual(['v=spf1 -all']);
    expect(asked).toEqual(['TXT spf.cache.example']);
    await eventually(async () => expect(await cache.txt('spf.cache.example')).toEqual(['v=spf1 +all']), 5000, 50);
  });

  it('keeps "no such record" too, and asks a question in flight once', async () => {
    const { resolver, asked } = counted();
    const cache = cachingDnsResolver(resolver, { ttlMs: 60_000, maxEntries: 100 });
    const answers = await Promise.all(Array.from({ length: 5 }, () => cache.txt('_dmarc.nothing.cache.example')));
    expect(answers).toEqual(Array(5).fill([]));
    expect(await cache.txt('_dmarc.nothing.cache.example')).toEqual([]);
    expect(asked).toEqual(['TXT _dmarc.nothing.cache.example']);
  });

  it('never keeps a temporary failure: the next question reaches the server', async () => {
    const { resolver, asked } = counted();
    const cache = cachingDnsResolver(resolver, { ttlMs: 60_000, maxEntries: 100 });
    server.setTxt('flaky.cache.example', ['v=spf1 -all']);
    server.failWith('SERVFAIL');
    try {
      await expect(cache.txt('flaky.cache.example')).rejects.toBeInstanceOf(DnsTemporaryFailure);
    } finally {
      server.failWith(null);
    }
    expect(await cache.txt('flaky.cache.example')).toEqual(['v=spf1 -all']);
    expect(asked).toEqual(['TXT flaky.cache.example', 'TXT flaky.cache.example']);
  });

  it('keeps at most maxEntries answers, letting the oldest go', async () => {
    const { resolver, asked } = counted();
    const cache = cachingDnsResolver(resolver, { ttlMs: 60_000, maxEntries: 2 });
    for (const name of ['a.cache.example', 'b.cache.example', 'c.cache.example', 'a.cache.example']) await cache.mx(name);
    expect(asked).toEqual(['MX a.cache.example', 'MX b.cache.example', 'MX c.cache.example', 'MX a.cache.example']);
  });
});
