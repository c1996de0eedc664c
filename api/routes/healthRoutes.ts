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
 * GET /health: 200 when PostgreSQL answers and Temporal answers and is set up (its namespace and
 * Mailroom's search attributes usable, so a workflow start can succeed); 503 naming the part that
 * is not. Temporal's answer is cached for a second (temporal/healthCheck.ts). From SIGTERM on, 503
 * with status "draining" whatever the parts say, for as long as the process answers at all: a load
 * balancer takes the instance out of rotation while it finishes what it accepted.
 */
export function healthRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Operations', access: 'none' });
  route.get(
    '/health',
    {
      summary: 'Check health',
      description:
        '200 when PostgreSQL answers and Temporal answers and is set up; 503 naming the part that does not. ' +
        'From SIGTERM on, 503 with status `draining` while the process finishes what it accepted. Answers within a second; never cached.',
      responses: {
        200: { description: 'Ready', schema: healthResponse, example: { status: 'ok', database: 'ok', temporal: 'ok' } },
        503: {
          description: 'Not ready: a dependency is down, or the process is draining',
          schema: healthResponse,
          example: { status: 'degraded', database: 'ok', temporal: 'down' },
        },
      },
    },
    async (ctx) => {
      const [db, reachable] = await Promise.all([databaseReachable(deps), deps.temporal.isReachable()]);
      const temporal = reachable && deps.temporal.isSetUp();
      const draining = deps.isDraining?.() ?? false;
      const ok = db && temporal && !draining;
      ctx.status = ok ? 200 : 503;
      ctx.set('Cache-Control', 'no-store');
      ctx.body = {
        status: draining ? 'draining' : ok ? 'ok' : 'degraded',
        database: db ? 'ok' : 'down',
        temporal: temporal ? 'ok' : 'down',
      } satisfies z.input<typeof healthResponse>;
    },
  );
  return router;
}
