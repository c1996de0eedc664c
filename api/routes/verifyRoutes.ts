import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { verifyEmailAddress } from '../../lib/verify/emailVerification';

/**
 * The body is refused (422) only when `email` is missing, not a string or absurdly long: a string
 * that is not a well-formed address is a question with an answer (200, `valid: false`, a reason
 * saying what is wrong), as contract section 13 has it.
 */
const verifyBody = z.object({
  email: z.string({ required_error: 'Email is required', invalid_type_error: 'Email must be a string' }).max(1000, 'Email must be at most 1000 characters'),
});

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
