import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook receivers of bench:webhooks, in a process of their own (as the SMTP sink is, so
 * that receiving does not share the load generator's event loop and its CPU can be told apart):
 *
 * - `ok` answers 200 at once, and notes for each message its event's time (`data.event.createdAt`)
 *   and when it arrived, so the parent can tell the delay from event to receipt;
 * - `fail` answers 500 at once;
 * - `slow` answers 200 after `argv[2]` ms (20 s by default, past the 15 s an attempt may take).
 *
 * Each counts requests and distinct `webhook-id`s (a message seen again is a retry, or for `ok` a
 * duplicate). Counts go to the parent four times a second, with the `ok` receipts since the last.
 */
const slowMs = Number(process.argv[2] ?? 20_000);

interface Counts {
  requests: number;
  distinct: number;
  /** Requests under way now, and the most at once. */
  open: number;
  maxOpen: number;
}

const seen = { ok: new Set<string>(), fail: new Set<string>(), slow: new Set<string>() };
const counts: Record<keyof typeof seen, Counts> = {
  ok: { requests: 0, distinct: 0, open: 0, maxOpen: 0 },
  fail: { requests: 0, distinct: 0, open: 0, maxOpen: 0 },
  slow: { requests: 0, distinct: 0, open: 0, maxOpen: 0 },
};
/** [event createdAt, received at] in epoch ms, for `ok` receipts not yet reported. */
let receipts: Array<[number, number]> = [];
let duplicates = 0;

function receiver(name: keyof typeof seen, answer: (res: http.ServerResponse) => void) {
  return http.createServer((req, res) => {
    const c = counts[name];
    c.requests++;
    c.open++;
    c.maxOpen = Math.max(c.maxOpen, c.open);
    res.once('close', () => c.open--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const receivedAt = Date.now();
      const id = String(req.headers['webhook-id']);
      if (seen[name].has(id)) {
        if (name === 'ok') duplicates++;
      } else {
        seen[name].add(id);
        c.distinct++;
      }
      if (name === 'ok') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { event: { createdAt: string } } };
        receipts.push([Date.parse(body.data.event.createdAt), receivedAt]);
      }
      answer(res);
    });
  });
}

const servers = {
  ok: receiver('ok', (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')),
  fail: receiver('fail', (res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"bench"}')),
  slow: receiver('slow', (res) => {
    const timer = setTimeout(() => {
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    }, slowMs);
    // The sender gave up (its 15 s timeout): nothing left to answer.
    res.once('close', () => clearTimeout(timer));
  }),
};

function report() {
  process.send!({ counts, duplicates, receipts });
  receipts = [];
}

async function listen(server: http.Server): Promise<number> {
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

void (async () => {
  const ports = { ok: await listen(servers.ok), fail: await listen(servers.fail), slow: await listen(servers.slow) };
  const reporting = setInterval(report, 250);
  process.send!({ ports });
  process.on('message', (m: { flush?: boolean }) => {
    if (m.flush) report();
  });
  process.on('disconnect', () => {
    clearInterval(reporting);
    for (const server of Object.values(servers)) server.closeAllConnections();
    process.exit(0);
  });
})();
