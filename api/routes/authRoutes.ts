import Router from '@koa/router';
import { z } from 'zod';
import type { ApiDeps, AppContext, AppState } from '../state';
import { ApiError, badRequest, conflict, forbidden } from '../http/errors';
import { emailAddress, parseBody, parseQuery } from '../http/validation';
import { clearSessionCookie, requireUser, setSessionCookie } from '../auth/session';
import { userRepository } from '../../db/repositories/userRepository';
import { hashPassword, verifyPassword, burnPasswordCheck, MAX_PASSWORD_BYTES } from '../../lib/passwords';
import type { User } from '../../db/entities/user';
import type { UserTokenPurpose } from '../../db/entities/userToken';
import { accountEmailWorkflow } from '../../workflows';
import { startWorkflow, workflowStartLogFields } from '../../temporal-config/startWorkflow';

const password = z
  .string({ required_error: 'Password is required' })
  .min(8, 'Password must be at least 8 characters')
  .refine((p) => Buffer.byteLength(p, 'utf8') <= MAX_PASSWORD_BYTES, { message: `Password must be at most ${MAX_PASSWORD_BYTES} bytes` });

const credentials = z.object({ email: emailAddress, password });
const loginBody = z.object({ email: emailAddress, password: z.string({ required_error: 'Password is required' }).min(1).max(1024) });
const tokenBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200) });
const resetBody = z.object({ token: z.string({ required_error: 'Token is required' }).min(1).max(200), password });
const emailBody = z.object({ email: emailAddress });

const TOKEN_TTL: Record<UserTokenPurpose, number> = { VERIFY_EMAIL: 24 * 3600_000, RESET_PASSWORD: 3600_000 };

export function serializeUser(user: User) {
  return { id: user.id, email: user.email, emailVerified: Boolean(user.emailVerifiedAt), createdAt: user.createdAt };
}

export function authRoutes(deps: ApiDeps) {
  const { config, temporal, logger } = deps;
  const router = new Router<AppState>();

  /** Issues a token and starts the durable workflow that mails it. False when Temporal refused the start. */
  async function mailToken(ctx: AppContext, user: User, purpose: UserTokenPurpose): Promise<boolean> {
    const token = await userRepository.issueToken(ctx.state.em, config.secret, user.id, purpose, TOKEN_TTL[purpose]);
    try {
      await startWorkflow(temporal, accountEmailWorkflow, {
        workflowId: `account-email-${token.id}`,
        taskQueue: temporal.taskQueue,
        args: [{ tokenId: token.id }],
      });
      return true;
    } catch (err) {
      logger.error({ ...workflowStartLogFields(err), requestId: ctx.state.requestId, purpose }, 'could not start the account email workflow');
      return false;
    }
  }

  router.post('/auth/signup', async (ctx) => {
    if (config.disableSignups) throw forbidden('Signups are disabled on this Mailroom instance');
    const body = parseBody(credentials, ctx.request.body);
    const user = await userRepository.create(ctx.state.em, body.email, await hashPassword(body.password));
    if (!user) throw conflict('An account with this email already exists');
    const verificationEmailSent = await mailToken(ctx, user, 'VERIFY_EMAIL');
    setSessionCookie(ctx, config, user);
    ctx.status = 201;
    ctx.body = { user: serializeUser(user), verificationEmailSent };
  });

  router.post('/auth/login', async (ctx) => {
    const body = parseBody(loginBody, ctx.request.body);
    const user = await userRepository.findByEmail(ctx.state.em, body.email);
    const ok = user ? await verifyPassword(body.password, user.passwordHash) : await burnPasswordCheck(body.password);
    if (!user || !ok) throw new ApiError(401, 'INVALID_CREDENTIALS', 'Invalid email or password');
    setSessionCookie(ctx, config, user);
    ctx.body = { user: serializeUser(user) };
  });

  router.get('/auth/logout', (ctx) => {
    clearSessionCookie(ctx, config);
    ctx.body = { success: true };
  });

  router.get('/auth/oauth-config', (ctx) => {
    ctx.body = { providers: [] };
  });

  async function verifyEmail(ctx: AppContext, rawToken: string) {
    const consumed = await userRepository.consumeToken(ctx.state.em, rawToken, 'VERIFY_EMAIL');
    if (!consumed) throw badRequest('This verification token is invalid, expired or already used');
    await ctx.state.em.execute(`update users set email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = ?`, [consumed.userId]);
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
    if (!(await mailToken(ctx, user, 'VERIFY_EMAIL'))) throw new ApiError(503, 'SERVICE_UNAVAILABLE', 'Could not queue the email; try again shortly');
    ctx.body = { success: true, alreadyVerified: false };
  });

  // Answers the same whether or not the account exists, so it cannot be used to probe for accounts.
  router.post('/auth/request-password-reset', async (ctx) => {
    const { email } = parseBody(emailBody, ctx.request.body);
    const user = await userRepository.findByEmail(ctx.state.em, email);
    if (user && !(await mailToken(ctx, user, 'RESET_PASSWORD'))) {
      throw new ApiError(503, 'SERVICE_UNAVAILABLE', 'Could not queue the email; try again shortly');
    }
    ctx.body = { success: true, message: 'If an account exists for this email, a reset link is on its way' };
  });

  router.post('/auth/reset-password', async (ctx) => {
    const body = parseBody(resetBody, ctx.request.body);
    const passwordHash = await hashPassword(body.password);
    const consumed = await userRepository.consumeToken(ctx.state.em, body.token, 'RESET_PASSWORD');
    if (!consumed) throw badRequest('This reset token is invalid, expired or already used');
    // A new password ends every existing session; the mailed address is proven, so it counts as verified.
    await ctx.state.em.execute(
      `update users set password_hash = ?, session_epoch = session_epoch + 1, email_verified_at = coalesce(email_verified_at, now()), updated_at = now() where id = ?`,
      [passwordHash, consumed.userId],
    );
    ctx.body = { success: true };
  });

  return router;
}
