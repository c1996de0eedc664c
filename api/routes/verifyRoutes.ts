import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { verifyEmailAddress } from '../../lib/verify/emailVerification';
import { verifyBody } from '../schemas/verifySchemas';

/** POST /v1/verify (secret key): syntax, domain lists and DNS checks of one address (contract 13). */
export function verifyRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const dns = dnsResolverFromConfig(deps.config);

  router.post('/v1/verify', ...keyAuthenticated('secret', deps), async (ctx) => {
    const { email } = parseBody(verifyBody, ctx.request.body);
    ctx.body = { success: true, data: await verifyEmailAddress(dns, email) };
  });
  return router;
}
