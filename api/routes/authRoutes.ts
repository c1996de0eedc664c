import { randomUUID } from 'node:crypto';
import Router from '@koa/router';
import type { z } from 'zod';
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
import {
  credentials,
  loginBody,
  tokenBody,
  resetBody,
  emailBody,
  userResponse,
  signupResponse,
  loginResponse,
  authSuccessResponse,
  oauthConfigResponse,
  verifyEmailResponse,
  requestVerificationResponse,
  requestPasswordResetResponse,
} from '../schemas/authSchemas';
import { describedRoutes } from '../openapi/describedRouter';

const invalidCredentials = () => new ApiError(401, 'INVALID_CREDENTIALS', 'Invalid email or password');

export function serializeUser(user: User): z.input<typeof userResponse> {
  return { id: user.id, email: user.email, emailVerified: Boolean(user.emailVerifiedAt), createdAt: user.createdAt };
}

export function authRoutes(deps: ApiDeps) {
  const { config, temporal, logger } = deps;
  const router = new Router<AppState>();
  const route = describedRoutes(router, { tag: 'Account', access: 'none' });

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

  route.post(
    '/auth/signup',
    {
      summary: 'Sign up',
      description:
        'Creates an account and signs it in (sets the `mailroom_session` cookie), then queues the verification email. ' +
        '`verificationEmailSent` is false when the email could not be queued (request another with POST /auth/request-verification). ' +
        '403 when signups are disabled on this instance, 409 when the address already has an account.',
      body: { schema: credentials, example: { email: 'ada@example.com', password: 'correct horse battery staple' } },
      responses: {
        201: {
          description: 'The account, signed in',
          schema: signupResponse,
          headers: { 'Set-Cookie': { description: 'The session cookie, `mailroom_session`' } },
          example: {
            user: { id: '3f1c7a52-8d4e-4b7a-9c1d-2e5f6a7b8c9d', email: 'ada@example.com', emailVerified: false, createdAt: '2026-11-27T16:22:47.123Z' },
            verificationEmailSent: true,
          },
        },
      },
    },
    async (ctx) => {
      if (config.disableSignups) throw forbidden('Signups are disabled on this Mailroom instance');
      const body = parseBody(credentials, ctx.request.body);
      const user = await userRepository.create(ctx.state.em, body.email, await hashPassword(body.password));
      if (!user) throw conflict('An account with this email already exists');
      await startSession(ctx, config, user);
      const verificationEmailSent = await queueAccountEmail(ctx, user.email, 'VERIFY_EMAIL');
      ctx.status = 201;
      ctx.body = { user: serializeUser(user), verificationEmailSent } satisfies z.input<typeof signupResponse>;
    },
  );

  route.post(
    '/auth/login',
    {
      summary: 'Sign in',
      description:
        'Sets the `mailroom_session` cookie. A wrong email or password answers 401 `INVALID_CREDENTIALS` either way; ' +
        'repeated failures for an address or from a client are slowed down (429).',
      body: { schema: loginBody, example: { email: 'ada@example.com', password: 'correct horse battery staple' } },
      responses: {
        200: {
          description: 'Signed in',
          schema: loginResponse,
          headers: { 'Set-Cookie': { description: 'The session cookie, `mailroom_session`' } },
          example: {
            user: { id: '3f1c7a52-8d4e-4b7a-9c1d-2e5f6a7b8c9d', email: 'ada@example.com', emailVerified: true, createdAt: '2026-11-27T16:22:47.123Z' },
          },
        },
      },
    },
    async (ctx) => {
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
      ctx.body = { user: serializeUser(user) } satisfies z.input<typeof loginResponse>;
    },
  );

  // Ends the session on the server (the cookie stops working even if copied) and clears it; answers the same without one.
  route.get(
    '/auth/logout',
    {
      summary: 'Sign out',
      description: 'Ends the session on the server and clears the cookie; answers the same without a session.',
      responses: {
        200: {
          description: 'Signed out',
          schema: authSuccessResponse,
          headers: { 'Set-Cookie': { description: 'Clears the session cookie, `mailroom_session`' } },
        },
      },
    },
    async (ctx) => {
      await endSession(ctx, config);
      ctx.body = { success: true } satisfies z.input<typeof authSuccessResponse>;
    },
  );

  route.get(
    '/auth/oauth-config',
    {
      summary: 'List OAuth sign-in providers',
      description: 'No OAuth provider is implemented yet: the list is always empty.',
      responses: { 200: { description: 'The providers', schema: oauthConfigResponse } },
    },
    (ctx) => {
      ctx.body = { providers: [] } satisfies z.input<typeof oauthConfigResponse>;
    },
  );

  async function verifyEmail(ctx: AppContext, rawToken: string) {
    const consumed = await userRepository.consumeToken(ctx.state.em, rawToken, 'VERIFY_EMAIL');
    if (!consumed) throw badRequest('This verification token is invalid, expired or already used');
    await userRepository.markEmailVerified(ctx.state.em, consumed.userId);
    const user = await userRepository.findById(ctx.state.em.fork(), consumed.userId);
    return user!;
  }

  route.post(
    '/auth/verify-email',
    {
      summary: 'Verify the email address',
      description: 'With the token of the verification email. 400 when the token is invalid, expired or already used.',
      body: { schema: tokenBody },
      responses: { 200: { description: 'The address is verified', schema: verifyEmailResponse } },
    },
    async (ctx) => {
      const { token } = parseBody(tokenBody, ctx.request.body);
      ctx.body = { success: true, user: serializeUser(await verifyEmail(ctx, token)) } satisfies z.input<typeof verifyEmailResponse>;
    },
  );

  // The link in the verification mail: the same check, answered with a page a person can read.
  route.get(
    '/auth/verify-email',
    {
      summary: 'Verify the email address (the link in the mail)',
      description: 'The same check as POST /auth/verify-email, answered with a page a person can read.',
      query: tokenBody,
      responses: { 200: { description: 'A page saying the address is verified', contentType: 'text/html' } },
    },
    async (ctx) => {
      const { token } = parseQuery(tokenBody, ctx.query);
      await verifyEmail(ctx, token);
      ctx.type = 'html';
      ctx.body = '<!doctype html><meta charset="utf-8"><title>Email verified</title><p>Your email address is verified. You can close this page.</p>';
    },
  );

  route.post(
    '/auth/request-verification',
    {
      summary: 'Send the verification email again',
      description:
        'Queues a new verification email for the signed-in account, unless it is already verified. ' +
        'Limited per client address (429); beyond the account’s own mail limit nothing is sent and the answer is the same. ' +
        '503 when the email could not be queued.',
      access: 'session',
      responses: { 200: { description: 'Queued, or already verified', schema: requestVerificationResponse } },
    },
    requireUser(config),
    async (ctx) => {
      const user = ctx.state.user!;
      if (user.emailVerifiedAt) {
        ctx.body = { success: true, alreadyVerified: true } satisfies z.input<typeof requestVerificationResponse>;
        return;
      }
      await spendAddressBudget(ctx, ADDRESS_BUDGETS.ACCOUNT_MAIL, tooManyMailRequests);
      // Beyond the account's mail limit nothing is sent, and the answer is the same.
      if (!(await queueAccountEmail(ctx, user.email, 'VERIFY_EMAIL'))) throw queueFailed();
      ctx.body = { success: true, alreadyVerified: false } satisfies z.input<typeof requestVerificationResponse>;
    },
  );

  // Does the same work and answers the same whether or not the account exists, or its mail limit
  // is reached: the lookup happens in the queued workflow, so it cannot be used to probe for accounts.
  route.post(
    '/auth/request-password-reset',
    {
      summary: 'Request a password reset email',
      description:
        'Answers the same whether or not an account uses the address, so it cannot be used to find accounts. ' +
        'Limited per client address (429); 503 when the email could not be queued.',
      body: { schema: emailBody, example: { email: 'ada@example.com' } },
      responses: {
        200: {
          description: 'Queued if the account exists',
          schema: requestPasswordResetResponse,
          example: { success: true, message: 'If an account exists for this email, a reset link is on its way' },
        },
      },
    },
    async (ctx) => {
      const { email } = parseBody(emailBody, ctx.request.body);
      // Per client address, whatever the email: it reveals nothing about accounts.
      await spendAddressBudget(ctx, ADDRESS_BUDGETS.ACCOUNT_MAIL, tooManyMailRequests);
      if (!(await queueAccountEmail(ctx, email, 'RESET_PASSWORD'))) throw queueFailed();
      ctx.body = { success: true, message: 'If an account exists for this email, a reset link is on its way' } satisfies z.input<
        typeof requestPasswordResetResponse
      >;
    },
  );

  route.post(
    '/auth/reset-password',
    {
      summary: 'Reset the password',
      description:
        'With the token of the reset email and the new password. Ends every session of the account and retires its other open tokens. ' +
        '400 when the token is invalid, expired or already used.',
      body: { schema: resetBody, example: { token: 'the token from the email', password: 'a new long passphrase' } },
      responses: { 200: { description: 'The password is changed', schema: authSuccessResponse } },
    },
    async (ctx) => {
      const body = parseBody(resetBody, ctx.request.body);
      const passwordHash = await hashPassword(body.password);
      // Also retires every other open token of the account and ends all its sessions.
      const reset = await userRepository.resetPassword(ctx.state.em, body.token, passwordHash);
      if (!reset) throw badRequest('This reset token is invalid, expired or already used');
      ctx.body = { success: true } satisfies z.input<typeof authSuccessResponse>;
    },
  );

  return router;
}
