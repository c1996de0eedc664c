import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { pingDatabase } from '../../db/orm';
import { describedRoutes } from '../openapi/describedRouter';
import { healthResponse } from '../schemas/operationsSchemas';

/** /health answers within a second whatever its dependencies do, so probes never pile up. */
const DATABASE_CHECK_TIMEOUT_MS = 900;

async function databaseReachable(deps: ApiDeps): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      pingDatabase(deps.orm),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), DATABASE_CHECK_TIMEOUT_MS);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * GET /health (contract 2): 200 `ok` when PostgreSQL answers and Temporal answers and is set up
 * (its namespace and Mailroom's search attributes usable, so a workflow start can succeed); 200
 * `degraded` naming Temporal while only Temporal is not, since the API still takes sends (their
 * rows are the record, the delivery sweep starts them once Temporal is back), tracks and whatever
 * needs no workflow start, so a load balancer keeps it in service; 503 while the database does not
 * answer. Temporal's answer is cached for a second (temporal/healthCheck.ts). From SIGTERM on, 503
 * with status "draining" whatever the parts say, for as long as the process answers at all: a load
 * balancer takes the instance out of rotation while it finishes what it accepted. `npm start` waits
 * for `ok`.
 */
export function healthRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Operations', access: 'none' });
  route.get(
    '/health',
    {
      summary: 'Check health',
      description:
        '200 `ok` when PostgreSQL answers and Temporal answers and is set up. 200 `degraded` with `temporal: down` while only Temporal is away: ' +
        'sends and tracks are still taken (mail goes out once Temporal is back), what needs a workflow start answers 503. ' +
        '503 naming the database while PostgreSQL does not answer, and from SIGTERM on 503 with status `draining` while the process finishes what it accepted. ' +
        'Answers within a second; never cached.',
      responses: {
        200: {
          description: 'In service: everything answers (`ok`), or only Temporal is away (`degraded`)',
          schema: healthResponse,
          example: { status: 'ok', database: 'ok', temporal: 'ok' },
        },
        503: {
          description: 'Out of service: the database is down, or the process is draining',
          schema: healthResponse,
          example: { status: 'degraded', database: 'down', temporal: 'ok' },
        },
      },
    },
    async (ctx) => {
      const [db, reachable] = await Promise.all([databaseReachable(deps), deps.temporal.isReachable()]);
      const temporal = reachable && deps.temporal.isSetUp();
      const draining = deps.isDraining?.() ?? false;
      ctx.status = db && !draining ? 200 : 503;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = {
        status: draining ? 'draining' : db && temporal ? 'ok' : 'degraded',
        database: db ? 'ok' : 'down',
        temporal: temporal ? 'ok' : 'down',
      } satisfies z.input<typeof healthResponse>;
    },
  );
  return router;
}
