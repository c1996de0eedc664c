import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StripeRequest {
  method: string;
  path: string;
  /** The form fields as sent (`line_items[0][price]`, `payload[value]`, ...) or the query for GETs. */
  params: Record<string, string>;
  idempotencyKey: string | null;
}

export interface TestStripeServer {
  /** `http://127.0.0.1:<port>`, for STRIPE_API_URL. */
  url: string;
  secretKey: string;
  requests: StripeRequest[];
  /** Meter events Stripe keeps, by identifier (a repeated identifier is one event). */
  meterEvents: Map<string, Record<string, string>>;
  /** Invoices GET /v1/invoices lists for a customer. */
  invoices: Map<string, Array<Record<string, unknown>>>;
  /** The next `count` requests to `path` (e.g. `/v1/billing/meter_events`) answer `status`, as in an outage. */
  failNext(path: string, count: number, status?: number): void;
  close(): Promise<void>;
}

/**
 * A local HTTP server answering the Stripe API routes Mailroom calls, in Stripe's own shapes
 * (form-encoded requests, JSON objects, Stripe's error envelope, idempotency keys replayed), so
 * the official `stripe` package talks to it through its `host`/`port`/`protocol` options.
 */
export async function startStripeServer(): Promise<TestStripeServer> {
  const secretKey = `sk_test_${crypto.randomBytes(12).toString('hex')}`;
  const requests: StripeRequest[] = [];
  const meterEvents = new Map<string, Record<string, string>>();
  const invoices = new Map<string, Array<Record<string, unknown>>>();
  const replies = new Map<string, { status: number; body: unknown }>();
  const failures = new Map<string, { count: number; status: number }>();
  const id = (prefix: string) => `${prefix}_${crypto.randomBytes(8).toString('hex')}`;
  const error = (status: number, message: string, type = 'invalid_request_error') => ({ status, body: { error: { type, message } } });

  function answer(req: StripeRequest): { status: number; body: unknown } {
    const p = req.params;
    const now = Math.floor(Date.now() / 1000);
    if (req.method === 'POST' && req.path === '/v1/customers') {
      return {
        status: 200,
        body: {
          id: id('cus'),
          object: 'customer',
          name: p.name ?? null,
          email: p.email ?? null,
          metadata: { projectId: p['metadata[projectId]'] },
          created: now,
        },
      };
    }
    if (req.method === 'POST' && req.path === '/v1/checkout/sessions') {
      if (!p.customer || !p['line_items[0][price]'] || !p.success_url || p.mode !== 'subscription') return error(400, 'Missing required param');
      const sessionId = id('cs_test');
      return {
        status: 200,
        body: {
          id: sessionId,
          object: 'checkout.session',
          mode: 'subscription',
          customer: p.customer,
          client_reference_id: p.client_reference_id ?? null,
          url: `https://checkout.stripe.test/c/pay/${sessionId}`,
          created: now,
        },
      };
    }
    if (req.method === 'POST' && req.path === '/v1/billing_portal/sessions') {
      if (!p.customer) return error(400, 'Missing required param: customer');
      return {
        status: 200,
        body: {
          id: id('bps'),
          object: 'billing_portal.session',
          customer: p.customer,
          return_url: p.return_url ?? null,
          url: `https://billing.stripe.test/p/session/${id('test')}`,
          created: now,
        },
      };
    }
    if (req.method === 'GET' && req.path === '/v1/invoices') {
      const all = invoices.get(p.customer) ?? [];
      const limit = Number(p.limit ?? 10);
      const start = p.starting_after ? all.findIndex((i) => i.id === p.starting_after) + 1 : 0;
      return { status: 200, body: { object: 'list', url: '/v1/invoices', data: all.slice(start, start + limit), has_more: start + limit < all.length } };
    }
    if (req.method === 'POST' && req.path === '/v1/billing/meter_events') {
      if (!p.event_name || !p['payload[stripe_customer_id]'] || !p['payload[value]']) return error(400, 'Missing required param');
      const identifier = p.identifier ?? id('mev');
      if (!meterEvents.has(identifier)) meterEvents.set(identifier, p);
      return {
        status: 200,
        body: {
          object: 'billing.meter_event',
          identifier,
          event_name: p.event_name,
          payload: { stripe_customer_id: p['payload[stripe_customer_id]'], value: p['payload[value]'] },
          timestamp: Number(p.timestamp ?? now),
          created: now,
          livemode: false,
        },
      };
    }
    return error(404, `Unrecognized request URL (${req.method}: ${req.path})`);
  }

  const server = http.createServer((incoming, res) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (c) => chunks.push(c));
    incoming.on('end', () => {
      const url = new URL(incoming.url ?? '/', 'http://stripe.test');
      const form = incoming.method === 'GET' ? url.searchParams : new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const request: StripeRequest = {
        method: incoming.method ?? 'GET',
        path: url.pathname,
        params: Object.fromEntries(form.entries()),
        idempotencyKey: (incoming.headers['idempotency-key'] as string | undefined) ?? null,
      };
      requests.push(request);
      let reply: { status: number; body: unknown };
      const failure = failures.get(request.path);
      if (incoming.headers.authorization !== `Bearer ${secretKey}`) reply = error(401, 'Invalid API Key provided');
      else if (failure && failure.count > 0) {
        failure.count--;
        reply = error(failure.status, "Something went wrong on Stripe's end.", 'api_error');
      } else if (request.idempotencyKey && replies.has(request.idempotencyKey)) reply = replies.get(request.idempotencyKey)!;
      else {
        reply = answer(request);
        if (request.idempotencyKey && reply.status < 500) replies.set(request.idempotencyKey, reply);
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', 'request-id': id('req') });
      res.end(JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secretKey,
    requests,
    meterEvents,
    invoices,
    failNext(path, count, status = 500) {
      failures.set(path, { count, status });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
