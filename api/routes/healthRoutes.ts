import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { isTemporalReachable } from '../../temporal-config/client';

async function databaseReachable(deps: ApiDeps): Promise<boolean> {
  try {
    await Promise.race([
      deps.orm.em.fork().execute('select 1'),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 2000).unref()),
    ]);
    return true;
  } catch {
    return false;
  }
}

/** GET /health: 200 when PostgreSQL and Temporal both answer, 503 naming the part that does not. */
export function healthRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  router.get('/health', async (ctx) => {
    const [db, temporal] = await Promise.all([databaseReachable(deps), isTemporalReachable(deps.temporal)]);
    const ok = db && temporal;
    ctx.status = ok ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { status: ok ? 'ok' : 'degraded', database: db ? 'ok' : 'down', temporal: temporal ? 'ok' : 'down' };
  });
  return router;
}
