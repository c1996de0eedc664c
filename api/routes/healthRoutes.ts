import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { pingDatabase } from '../../db/orm';

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
 * GET /health: 200 when PostgreSQL and Temporal both answer, 503 naming the part that does not.
 * Temporal's answer is cached for a second (temporal/healthCheck.ts).
 */
export function healthRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.get('/health', async (ctx) => {
    const [db, temporal] = await Promise.all([databaseReachable(deps), deps.temporal.isReachable()]);
    const ok = db && temporal;
    ctx.status = ok ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: ok ? 'ok' : 'degraded', database: db ? 'ok' : 'down', temporal: temporal ? 'ok' : 'down' };
  });
  return router;
}
