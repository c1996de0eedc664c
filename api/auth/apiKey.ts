import type { Middleware } from 'koa';
import type { Config } from '../../lib/config';
import type { AppState } from '../state';
import { ApiError, invalidApiKey, unauthorized } from '../../lib/errors';
import { projectRepository } from '../../db/repositories/projectRepository';
import { memberRepository } from '../../db/repositories/memberRepository';
import { sessionUser } from './session';
import { isUuid } from '../http/validation';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';
import type { ApiKeyResolver } from '../../db/repositories/apiKeyResolver';
import { sha256Hex } from '../../lib/crypto';
import { rateLimit } from '../middleware/rateLimit';
import { senderDomainCandidates } from '../../lib/domainName';
import { senderAddressDomain } from '../../services/domains/senderDomainLookup';

/** The longest address the sender lookup reads ahead (RFC 5321's path limit); a longer one is left to the route's validation. */
const MAX_ADDRESS_LENGTH = 256;

export type KeyKind = 'secret' | 'public';

const wrongKindMessage: Record<KeyKind, string> = {
  secret: 'This endpoint requires a secret key (sk_*), not a public key',
  public: 'This endpoint requires a public key (pk_*), not a secret key',
};

/**
 * Resolves the request's project from its key (the specification's Authentication section):
 * `Authorization: Bearer pk_…|sk_…`, or a dashboard session plus `X-Project-Id` naming a
 * project the user belongs to.
 */
export function requireKey(kind: KeyKind, deps: { config: Config; apiKeys?: ApiKeyResolver }, options: KeyLookupOptions = {}): Middleware<AppState> {
  const { config, apiKeys: keys } = deps;
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    if (!header) {
      const projectId = ctx.get('X-Project-Id');
      const user = projectId ? await sessionUser(ctx, config) : null;
      if (!user) throw unauthorized(`Missing API key: send "Authorization: Bearer <${kind} key>"`);
      const membership = isUuid(projectId) ? await memberRepository.find(ctx.state.em, projectId, user.id) : null;
      const project = membership ? await projectRepository.findById(ctx.state.em, projectId) : null;
      if (!project) throw unauthorized('X-Project-Id does not name a project you belong to');
      ctx.state.user = user;
      ctx.state.keyKind = 'session';
      return withProject(project, ctx, next);
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthorized('The Authorization header must be "Bearer <API key>"');
    const key = match[1];
    const given: KeyKind | undefined = key.startsWith('sk_') ? 'secret' : key.startsWith('pk_') ? 'public' : undefined;
    if (!given) throw invalidApiKey('Invalid API key: keys start with pk_ or sk_');
    if (given !== kind) throw invalidApiKey(wrongKindMessage[kind]);
    if (key.length > 200) throw invalidApiKey();
    let project;
    if (config.rateLimitPerMinute > 0) {
      // Looked up and counted for the rate limit in one statement; rateLimit() decides with the count.
      const column = given === 'secret' ? 'secret_key_hash' : 'public_key';
      const value = given === 'secret' ? sha256Hex(key) : key;
      const limit = config.rateLimitPerMinute;
      const sender = senderOf(options, ctx);
      const found = keys
        ? await keys.resolve(column, value, limit, sender?.candidates)
        : await rateLimitRepository
            .findProjectAndHit(ctx.state.em, column, value, { limit }, sender?.candidates)
            .then((f) => f && { project: f.project, hit: f.hits[0], senderDomain: f.senderDomain });
      if (found) ctx.state.rateLimitHit = found.hit;
      if (sender && found?.senderDomain !== undefined) ctx.state.checkedSender = { fromDomain: sender.fromDomain, row: found.senderDomain };
      project = found?.project;
    } else {
      project = given === 'secret' ? await projectRepository.findBySecretKey(ctx.state.em, key) : await projectRepository.findByPublicKey(ctx.state.em, key);
    }
    if (!project) throw invalidApiKey();
    ctx.state.keyKind = given;
    return withProject(project, ctx, next);
  };
}

/** What a route may ask the key lookup to read in the same statement. */
export interface KeyLookupOptions {
  /**
   * The request's sender address, when the route has one in its (parsed, not yet validated)
   * body: the key's statement then also reads the sender-domain rule's answer
   * (`ctx.state.checkedSender`), which the route's own check uses instead of a statement of its own.
   */
  senderAddressOf?: (ctx: Parameters<Middleware<AppState>>[0]) => unknown;
}

/** The sender address a route names, when it is one the lookup can ask about: its lower-case domain and the domains covering it. */
function senderOf(options: KeyLookupOptions, ctx: Parameters<Middleware<AppState>>[0]): { fromDomain: string; candidates: string[] } | null {
  const address = options.senderAddressOf?.(ctx);
  if (typeof address !== 'string' || address.length > MAX_ADDRESS_LENGTH) return null;
  const fromDomain = senderAddressDomain(address);
  const candidates = fromDomain === null ? [] : senderDomainCandidates(`sender@${fromDomain}`);
  return fromDomain !== null && candidates.length ? { fromDomain, candidates } : null;
}

async function withProject(project: NonNullable<AppState['project']>, ctx: Parameters<Middleware<AppState>>[0], next: () => Promise<unknown>) {
  if (project.disabled) {
    const paymentFailed = project.disabledReason === 'PAYMENT_FAILED';
    throw new ApiError(
      403,
      'PROJECT_DISABLED',
      paymentFailed ? 'This project is disabled: its last payment failed. Update the payment method in the billing portal.' : 'This project is disabled',
      { details: { disabledReason: project.disabledReason ?? null } },
    );
  }
  ctx.state.project = project;
  await next();
}

/** What every key-authenticated route mounts: the key (or session + X-Project-Id), then the rate limit (the project's, or the session user's). */
export function keyAuthenticated(kind: KeyKind, deps: { config: Config; apiKeys?: ApiKeyResolver }, options: KeyLookupOptions = {}): Middleware<AppState>[] {
  return [requireKey(kind, deps, options), rateLimit({ perProject: deps.config.rateLimitPerMinute, perSessionUser: deps.config.sessionRateLimitPerMinute })];
}
