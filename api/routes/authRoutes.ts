import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, badRequest, conflict, forbidden } from '../../lib/errors';
import { parseBody, parseQuery } from '../http/validation';
import { endSession, requireUser, startSession } from '../auth/session';
import { admitLoginAttempt, loginSucceeded } from '../auth/loginThrottle';
import { spendAddressBudget } from '../auth/addressBudget';
import { ADDRESS_BUDGETS } from '../../db/repositories/clientAddressBudget';
import { userRepository } from '../../db/repositories/userRepository';
import { hashPassword, verifyPassword, burnPasswordCheck } from '../../lib/passwords';
import type { User } from '../../db/entities/user';
import type { UserTokenPurpose } from '../../db/entities/userToken';
import type { accountEmailRequestWorkflow } from '../../workflows';
import { startWorkflow, workflowStartLogFields } from '../../temporal/startWorkflow';
import { credentials, loginBody, tokenBody, resetBody, emailBody } from '../schemas/authSchemas';

const invalidCredentials = () => new ApiError(401, 'INVALID_CREDENTIALS', 'Invalid email or password');

export function serializeUser(user: User) {
  return { id: user.id, email: user.email, emailVerified: Boolean(user.emailVerifiedAt), createdAt: user.createdAt };
}

export function authRoutes(deps: ApiDeps) {
  const { config, temporal, logger } = deps;
  const router = new Router<AppState>();

  /**
   * Queues one account mail: the workflow looks the account up, applies the mail limit, issues the
   * token and sends it, so this costs the same whatever the outcome. False when Temporal refused the start.
   */
  async function queueAccountEmail(ctx: AppContext, email: string, purpose: UserTokenPurpose): Promise<boolean> {
    const request: Parameters<typeof accountEmailRequestWorkflow>[0] = { requestId: randomUUID(), email, purpose };
    try {
      await startWorkflow(temporal, 'accountEmailRequestWorkflow', {
        workflowId: `account-email-${request.requestId}`,
        taskQueue: temporal.taskQueue,
        args: [request],
      });
      return true;
    } catch (err) {
      logger.error({ ...workflowStartLogFields(err), requestId: ctx.state.requestId, purpose }, 'could not start the account email workflow');
      return false;
    }
  }

  const tooManyMailRequests = 'Too many account mail requests from this address; try again later';
  const queueFailed = () => new ApiError(503, 'SERVICE_UNAVAILABLE', 'Could not queue the email; try again shortly');

  router.post('/auth/signup', async (ctx) => {
    if (config.disableSignups) throw forbidden('Signups are disabled on this Mailroom instance');
    const body = parseBody(credentials, ctx.request.body);
    const user = await userRepository.create(ctx.state.em, body.email, await hashPassword(body.password));
    if (!user) throw conflict('An account with this email already exists');
    await startSession(ctx, config, user);
    const verificationEmailSent = await queueAccountEmail(ctx, user.email, 'VERIFY_EMAIL');
    ctx.status = 201;
    ctx.body = { user: serializeUser(user), verificationEmailSent };
  });

  router.post('/auth/login', async (ctx) => {
    const body = parseBody(loginBody, ctx.request.body);
    const attempt = await admitLoginAttempt(ctx, body.email);
    const user = await userRepository.findByEmail(ctx.state.em, body.email);
    if (!user) {
      await burnPasswordCheck(body.password);
      throw invalidCredentials();
    }
    const check = await verifyPassword(body.password, user.passwordHash);
    if (!check.ok) throw invalidCredentials();
    await loginSucceeded(ctx, attempt);
    if (check.needsRehash) await userRepository.replacePasswordHash(ctx.state.em, user.id, user.passwordHash, await hashPassword(body.password));
    await startSession(ctx, config, user);
    ctx.body = { user: serializeUser(user) };
  });

  // Ends the session on the server (the cookie stops working even if copied) and clears it; answers the same without one.
  router.get('/auth/logout', async (ctx) => {
    await endSession(ctx, config);
    ctx.body = { success: true };
  });

  router.get('/auth/oauth-config', (ctx) => {
    ctx.body = { providers: [] };
  });

  async function verifyEmail(ctx: AppContext, rawToken: string) {
    const consumed = await userRepository.consumeToken(ctx.state.em, rawToken, 'VERIFY_EMAIL');
    if (!consumed) throw badRequest('This verification token is invalid, expired or already used');
    await userRepository.markEmailVerified(ctx.state.em, consumed.userId);
    const user = await userRepository.findById(ctx.state.em.fork(), consumed.userId);
    return user!;
  }

  router.post('/auth/verify-email', async (ctx) => {
    const { token } = parseBody(tokenBody, ctx.request.body);
    ctx.body = { success: true, user: serializeUser(await verifyEmail(ctx, token)) };
  });

  // The link in the verification mail: the same check, answered with a page a person can read.
  router.get('/auth/verify-email', async (ctx) => {
    const { token } = parseQuery(tokenBody, ctx.query);
    await verifyEmail(ctx, token);
    ctx.type = 'html';
    ctx.body = '<!doctype html><meta charset="utf-8"><title>Email verified</title><p>Your email address is verified. You can close this page.</p>';
  });

  router.post('/auth/request-verification', requireUser(config), async (ctx) => {
    const user = ctx.state.user!;
    if (user.emailVerifiedAt) {
      ctx.body = { success: true, alreadyVerified: true };
      return;
    }
    await spendAddressBudget(ctx, ADDRESS_BUDGETS.ACCOUNT_MAIL, tooManyMailRequests);
    // Beyond the account's mail limit nothing is sent, and the answer is the same.
    if (!(await queueAccountEmail(ctx, user.email, 'VERIFY_EMAIL'))) throw queueFailed();
    ctx.body = { success: true, alreadyVerified: false };
  });

  // Does the same work and answers the same whether or not the account exists, or its mail limit
  // is reached: the lookup happens in the queued workflow, so it cannot be used to probe for accounts.
  router.post('/auth/request-password-reset', async (ctx) => {
    const { email } = parseBody(emailBody, ctx.request.body);
    // Per client address, whatever the email: it reveals nothing about accounts.
    await spendAddressBudget(ctx, ADDRESS_BUDGETS.ACCOUNT_MAIL, tooManyMailRequests);
    if (!(await queueAccountEmail(ctx, email, 'RESET_PASSWORD'))) throw queueFailed();
    ctx.body = { success: true, message: 'If an account exists for this email, a reset link is on its way' };
  });

  router.post('/auth/reset-password', async (ctx) => {
    const body = parseBody(resetBody, ctx.request.body);
    const passwordHash = await hashPassword(body.password);
    // Also retires every other open token of the account and ends all its sessions.
    const reset = await userRepository.resetPassword(ctx.state.em, body.token, passwordHash);
    if (!reset) throw badRequest('This reset token is invalid, expired or already used');
    ctx.body = { success: true };
  });

  return router;
}
