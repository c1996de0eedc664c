import dns2 from 'dns2';
import { findFreePort } from '../../lib/freePort';

const { Packet } = dns2;
// dns2's typings lag its code: RCODE exists, and answers are plain objects encoded by type.
const RCODE = (Packet as unknown as { RCODE: Record<'NXDOMAIN' | 'SERVFAIL', number> }).RCODE;

/**
 * A real DNS server on 127.0.0.1 (UDP and TCP on one port, the `dns2` package) answering from
 * records the test sets. Names it has no record for answer NXDOMAIN; names with records of
 * other types answer NODATA. Like every recursive resolver, it knows the root's nameservers
 * (lib/dns/dnsResolver.ts asks them to tell NXDOMAIN from an unreachable server). `failWith`
 * makes every answer a SERVFAIL, or no answer at all.
 */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, ready for DNS_SERVERS. */
  address: string;
  port: number;
  /** Replaces the TXT records of `name`; each value is split into 255-byte strings as DNS requires. */
  setTxt(name: string, values: string[]): void;
  setMx(name: string, records: Array<{ exchange: string; priority: number }>): void;
  /** Nameserver host names of `name` (a zone apex). */
  setNs(name: string, hosts: string[]): void;
  setA(name: string, addresses: string[]): void;
  setAaaa(name: string, addresses: string[]): void;
  /**
   * The A answers of `name` change with each question: the first question gets `answers[0]`, the
   * next `answers[1]`, and the last one repeats (a rebinding DNS server). Replaces setA's records.
   */
  setASequence(name: string, answers: string[][]): void;
  remove(name: string): void;
  failWith(mode: 'SERVFAIL' | 'SILENCE' | null): void;
  /** Questions asked so far, as `TYPE name`. */
  questions: string[];
  close(): Promise<void>;
}

type Records = {
  txt?: string[];
  mx?: Array<{ exchange: string; priority: number }>;
  ns?: string[];
  a?: string[];
  aaaa?: string[];
};

/** Test records are ASCII, so 255 characters are 255 bytes. */
function chunks(value: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < value.length; i += 255) parts.push(value.slice(i, i + 255));
  return parts.length ? parts : [''];
}

export async function startTestDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, Records>();
  const questions: string[] = [];
  const aSequences = new Map<string, string[][]>();
  let failure: 'SERVFAIL' | 'SILENCE' | null = null;
  const key = (name: string) => name.toLowerCase().replace(/\.$/, '');
  const root: Records = { ns: ['a.root-servers.net', 'b.root-servers.net'] };

  const server = dns2.createServer({
    udp: true,
    tcp: true,
    handle: (request: any, send: (response: any) => void) => {
      const [question] = request.questions;
      const typeName = Object.entries(Packet.TYPE).find(([, v]) => v === question.type)?.[0] ?? String(question.type);
      questions.push(`${typeName} ${question.name}`);
      if (failure === 'SILENCE') return;
      const response: any = Packet.createResponseFromRequest(request);
      if (failure === 'SERVFAIL') {
        response.header.rcode = RCODE.SERVFAIL;
        return send(response);
      }
      const found = key(question.name) === '' ? root : records.get(key(question.name));
      if (!found) {
        response.header.rcode = RCODE.NXDOMAIN;
        return send(response);
      }
      const base = { name: question.name, class: Packet.CLASS.IN, ttl: 300 };
      if (question.type === Packet.TYPE.TXT) {
        for (const value of found.txt ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data: chunks(value) });
      } else if (question.type === Packet.TYPE.MX) {
        for (const mx of found.mx ?? []) response.answers.push({ ...base, type: Packet.TYPE.MX, exchange: mx.exchange, priority: mx.priority });
      } else if (question.type === Packet.TYPE.NS) {
        for (const ns of found.ns ?? []) response.answers.push({ ...base, type: Packet.TYPE.NS, ns });
      } else if (question.type === Packet.TYPE.A) {
        const sequence = aSequences.get(key(question.name));
        const answer = sequence ? (sequence.length > 1 ? sequence.shift()! : sequence[0]) : found.a;
        for (const address of answer ?? []) response.answers.push({ ...base, type: Packet.TYPE.A, address });
      } else if (question.type === Packet.TYPE.AAAA) {
        for (const address of found.aaaa ?? []) response.answers.push({ ...base, type: Packet.TYPE.AAAA, address });
      }
      send(response);
    },
  });

  let port = 0;
  for (let attempt = 0; ; attempt++) {
    port = await findFreePort();
    try {
      await server.listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } });
      break;
    } catch (err) {
      if (attempt >= 5) throw err;
    }
  }

  return {
    address: `127.0.0.1:${port}`,
    port,
    questions,
    setTxt(name, values) {
      records.set(key(name), { ...records.get(key(name)), txt: values });
    },
    setMx(name, mx) {
      records.set(key(name), { ...records.get(key(name)), mx });
    },
    setNs(name, ns) {
      records.set(key(name), { ...records.get(key(name)), ns });
    },
    setA(name, a) {
      aSequences.delete(key(name));
      records.set(key(name), { ...records.get(key(name)), a });
    },
    setAaaa(name, aaaa) {
      records.set(key(name), { ...records.get(key(name)), aaaa });
    },
    setASequence(name, answers) {
      records.set(key(name), { ...records.get(key(name)), a: undefined });
      aSequences.set(
        key(name),
        answers.map((a) => [...a]),
      );
    },
    remove(name) {
      records.delete(key(name));
      aSequences.delete(key(name));
    },
    failWith(mode) {
      failure = mode;
    },
    async close() {
      await server.close();
    },
  };
}
