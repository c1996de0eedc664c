import Router from '@koa/router';
import type { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { conflict, notFound } from '../../lib/errors';
import { isUuid, parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { domainRepository } from '../../db/domains/domainRepository';
import { checkDomain, serializeDomain } from '../../services/domains/domainVerification';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { createDomainBody, domainListResponse, domainResponse, domainVerifyResponse } from '../schemas/domainSchemas';
import { describedRoutes } from '../openapi/describedRouter';

/** Sender domains (specification "Domains", contract section 8), secret key. */
export function domainRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const route = describedRoutes(router, { tag: 'Domains', access: 'secret' });
  const dns = dnsResolverFromConfig(deps.config);
  const recordSettings = {
    spfInclude: deps.config.spfInclude,
    inboundMxHost: deps.config.smtpListeners.inboundMxHost,
    returnPathSubdomain: deps.config.smtpListeners.returnPathSubdomain,
  };
  const serialize = (domain: Parameters<typeof serializeDomain>[0]): z.input<typeof domainResponse> => serializeDomain(domain, recordSettings);

  async function findDomain(ctx: AppContext) {
    const id = ctx.params.id;
    const domain = isUuid(id) ? await domainRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!domain) throw notFound('domain', id);
    return domain;
  }

  route.post(
    '/domains',
    {
      summary: 'Add a sender domain',
      description:
        'A PENDING domain with the DNS records to add (DKIM decides verification; SPF and DMARC are advice). ' +
        'Mail may be sent from an address only once a domain covering it is VERIFIED. 409 when the project already has it.',
      body: { schema: createDomainBody, example: { domain: 'example.com' } },
      responses: { 201: { description: 'The domain and its records', schema: domainResponse } },
    },
    ...auth,
    async (ctx) => {
      const { domain } = parseBody(createDomainBody, ctx.request.body);
      const created = await domainRepository.create(ctx.state.em, { projectId: ctx.state.project!.id, domain, secret: deps.config.secret });
      if (!created) throw conflict(`The domain ${domain} is already added to this project`, { domain });
      ctx.status = 201;
      ctx.body = serialize(created);
    },
  );

  route.get(
    '/domains/project/:projectId',
    {
      summary: 'List a project’s sender domains',
      description: '`projectId` must be the authenticated project’s (404 otherwise).',
      responses: { 200: { description: 'The project’s domains', schema: domainListResponse } },
    },
    ...auth,
    async (ctx) => {
      const project = ctx.state.project!;
      if (ctx.params.projectId !== project.id) throw notFound('project', ctx.params.projectId);
      ctx.body = (await domainRepository.listByProject(ctx.state.em, project.id)).map(serialize);
    },
  );

  // The record, and `check` saying whether DNS answered: a lookup that fails temporarily (the
  // DNS servers time out, fail or cannot be reached) answers the record unchanged (lastCheckedAt
  // shows no new check) with check.status DNS_UNAVAILABLE, so a client polling for VERIFIED is
  // not told that nothing changed when nothing could be looked at.
  route.get(
    '/domains/:id/verify',
    {
      summary: 'Check a domain’s DNS records',
      description:
        'Looks the records up now and updates the status. When DNS cannot be reached or fails temporarily, the domain is answered unchanged ' +
        'with `check.status` DNS_UNAVAILABLE (try again later), so a client polling for VERIFIED can tell "nothing changed" from "nothing could be looked at".',
      responses: { 200: { description: 'The domain after the check, and whether DNS answered', schema: domainVerifyResponse } },
    },
    ...auth,
    async (ctx) => {
      const domain = await findDomain(ctx);
      const outcome = await checkDomain(ctx.state.em, dns, domain, { spfInclude: deps.config.spfInclude });
      if (outcome.kind === 'deleted') throw notFound('domain', domain.id);
      if (outcome.kind === 'temporaryFailure') {
        deps.logger.warn({ domainId: domain.id, domain: domain.domain, error: outcome.error.message }, 'domain check: DNS lookup failed temporarily');
        ctx.body = {
          ...serialize(outcome.domain),
          check: {
            status: 'DNS_UNAVAILABLE',
            message: `${outcome.error.message}: the domain's status is unchanged; try again later`,
          },
        } satisfies z.input<typeof domainVerifyResponse>;
        return;
      }
      ctx.body = { ...serialize(outcome.domain), check: { status: 'CHECKED', message: null } } satisfies z.input<typeof domainVerifyResponse>;
    },
  );

  route.delete('/domains/:id', { summary: 'Delete a sender domain', responses: { 204: { description: 'Deleted' } } }, ...auth, async (ctx) => {
    const id = ctx.params.id;
    const deleted = isUuid(id) && (await domainRepository.delete(ctx.state.em, ctx.state.project!.id, id));
    if (!deleted) throw notFound('domain', id);
    ctx.status = 204;
  });

  return router;
}
