import Router from '@koa/router';
import type { ApiDeps, AppState } from '../state';
import { conflict, notFound } from '../../lib/errors';
import { isUuid, parseBody } from '../http/validation';
import { keyAuthenticated } from '../auth/apiKey';
import { domainRepository } from '../../db/domains/domainRepository';
import { checkDomain, serializeDomain } from '../../services/domains/domainVerification';
import { dnsResolverFromConfig } from '../../lib/dns/dnsResolver';
import { createDomainBody } from '../schemas/domainSchemas';

/** Sender domains (specification "Domains", contract section 8), secret key. */
export function domainRoutes(deps: ApiDeps) {
  const router = new Router<AppState>();
  const auth = keyAuthenticated('secret', deps);
  const dns = dnsResolverFromConfig(deps.config);
  const recordSettings = {
    spfInclude: deps.config.spfInclude,
    inboundMxHost: deps.config.smtpListeners.inboundMxHost,
    returnPathSubdomain: deps.config.smtpListeners.returnPathSubdomain,
  };
  const serialize = (domain: Parameters<typeof serializeDomain>[0]) => serializeDomain(domain, recordSettings);

  async function findDomain(ctx: { state: AppState; params: Record<string, string> }) {
    const id = ctx.params.id;
    const domain = isUuid(id) ? await domainRepository.findById(ctx.state.em, ctx.state.project!.id, id) : null;
    if (!domain) throw notFound('domain', id);
    return domain;
  }

  router.post('/domains', ...auth, async (ctx) => {
    const { domain } = parseBody(createDomainBody, ctx.request.body);
    const created = await domainRepository.create(ctx.state.em, { projectId: ctx.state.project!.id, domain, secret: deps.config.secret });
    if (!created) throw conflict(`The domain ${domain} is already added to this project`, { domain });
    ctx.status = 201;
    ctx.body = serialize(created);
  });

  router.get('/domains/project/:projectId', ...auth, async (ctx) => {
    const project = ctx.state.project!;
    if (ctx.params.projectId !== project.id) throw notFound('project', ctx.params.projectId);
    ctx.body = (await domainRepository.listByProject(ctx.state.em, project.id)).map(serialize);
  });

  // The record, and `check` saying whether DNS answered: a lookup that fails temporarily (the
  // DNS servers time out, fail or cannot be reached) answers the record unchanged (lastCheckedAt
  // shows no new check) with check.status DNS_UNAVAILABLE, so a client polling for VERIFIED is
  // not told that nothing changed when nothing could be looked at.
  router.get('/domains/:id/verify', ...auth, async (ctx) => {
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
      };
      return;
    }
    ctx.body = { ...serialize(outcome.domain), check: { status: 'CHECKED', message: null } };
  });

  router.delete('/domains/:id', ...auth, async (ctx) => {
    const id = ctx.params.id;
    const deleted = isUuid(id) && (await domainRepository.delete(ctx.state.em, ctx.state.project!.id, id));
    if (!deleted) throw notFound('domain', id);
    ctx.status = 204;
  });

  return router;
}
