import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppState } from '../state';
import { parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { verifyEmailAddress } from '../../lib/verify/emailVerification';
import { verifyBody, verifyResponse } from '../schemas/verifySchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** POST /v1/verify (secret key): syntax, domain lists and DNS checks of one address (contract 13). */
export function verifyRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Verification', access: 'secret' });
  const dns = dnsResolverFromConfig(deps.config);

  route.post(
    '/v1/verify',
    {
      summary: 'Verify an email address',
      description:
        'Syntax, disposable and personal domain lists, typos of common domains, and DNS (MX, A) checks of one address. ' +
        'An address that is not well formed is an answer (`valid: false` with reasons), not an error.',
      body: { schema: verifyBody, example: { email: 'ada@example.com' } },
      responses: {
        200: {
          description: 'The checks and, when not valid, why',
          schema: verifyResponse,
          example: {
            success: true,
            data: {
              email: 'ada@gmial.com',
              valid: false,
              isDisposable: false,
              isAlias: false,
              isTypo: true,
              isPlusAddressed: false,
              isPersonalEmail: true,
              domainExists: false,
              hasWebsite: false,
              hasMxRecords: false,
              reasons: ['Looks like a typo of gmail.com'],
              suggestedEmail: 'ada@gmail.com',
            },
          },
        },
      },
    },
    ...keyAuthenticated('secret', deps),
    async (ctx) => {
      const { email } = parseBody(verifyBody, ctx.request.body);
      ctx.body = { success: true, data: await verifyEmailAddress(dns, email) } satisfies z.input<typeof verifyResponse>;
    },
  );
  return router;
}
