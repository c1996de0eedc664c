import jwt from 'jsonwebtoken';
import type { Middleware } from 'koa';
import type { Config } from '../../lib/config';
import type { AppContext, AppState } from '../state';
import { forbidden, unauthorized } from '../../lib/errors';
import { isUuid } from '../http/validation';
import { sessionRepository } from '../../db/repositories/sessionRepository';
import type { User } from '../../db/entities/user';

export const SESSION_COOKIE = 'mailroom_session';
const SESSION_TTL_SECONDS = 7 * 24 * 3600;

interface SessionClaims {
  sub: string;
  /** The row in `sessions` that keeps this cookie valid; logout and a password reset delete it. */
  sid: string;
}

function cookieOptions(ctx: AppContext, config: Config) {
  const secure = config.publicUrl.startsWith('https://');
  // TLS is terminated in front of Mailroom when PUBLIC_URL is https; tell the cookie jar so.
  if (secure) (ctx.cookies as unknown as { secure: boolean }).secure = true;
  return { httpOnly: true, sameSite: 'lax' as const, secure, overwrite: true, path: '/' };
}

/** Opens a server-side session for the user and sets its cookie. */
export async function startSession(ctx: AppContext, config: Config, user: User): Promise<void> {
  const session = await sessionRepository.open(ctx.state.em, user.id, SESSION_TTL_SECONDS);
  const token = jwt.sign({ sub: user.id, sid: session.id } satisfies SessionClaims, config.secret, {
    algorithm: 'HS256',
    expiresIn: SESSION_TTL_SECONDS,
  });
  ctx.cookies.set(SESSION_COOKIE, token, { ...cookieOptions(ctx, config), maxAge: SESSION_TTL_SECONDS * 1000 });
}

/** Ends the session the request's cookie names (if any) and clears the cookie. */
export async function endSession(ctx: AppContext, config: Config): Promise<void> {
  const claims = sessionClaims(ctx, config);
  if (claims) await sessionRepository.end(ctx.state.em, claims.sid);
  ctx.cookies.set(SESSION_COOKIE, '', { ...cookieOptions(ctx, config), maxAge: 0, expires: new Date(0) });
}

/** The claims of a genuine, unexpired cookie; null when missing, forged, expired or from before server-side sessions. */
function sessionClaims(ctx: AppContext, config: Config): SessionClaims | null {
  const token = ctx.cookies.get(SESSION_COOKIE);
  if (!token) return null;
  try {
    const claims = jwt.verify(token, config.secret, { algorithms: ['HS256'] }) as unknown as Partial<SessionClaims>;
    if (typeof claims.sub !== 'string' || typeof claims.sid !== 'string' || !isUuid(claims.sub) || !isUuid(claims.sid)) return null;
    return { sub: claims.sub, sid: claims.sid };
  } catch {
    return null;
  }
}

/** The signed-in user, or null when the cookie is missing, forged, expired, or its session was ended. */
export async function sessionUser(ctx: AppContext, config: Config): Promise<User | null> {
  const claims = sessionClaims(ctx, config);
  return claims ? sessionRepository.findUser(ctx.state.em, claims.sid, claims.sub) : null;
}

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Contract 21's second guard against cross-site requests (the SameSite=Lax cookie is the first): a
 * call that changes state with the session cookie alone carries the JSON content type or a custom
 * header (`X-Requested-With`), neither of which a form on another site can send. Project calls by
 * session always carry one (`X-Project-Id`), so only the session's own routes are checked here.
 */
function sentByAScript(ctx: AppContext): boolean {
  if (READ_ONLY_METHODS.has(ctx.method)) return true;
  // The header's media type, body or not (ctx.is() answers null for a call without a body).
  return /^application\/([\w.-]+\+)?json$/.test(ctx.request.type) || ctx.get('X-Requested-With') !== '';
}

export function requireUser(config: Config): Middleware<AppState> {
  return async (ctx, next) => {
    const user = await sessionUser(ctx, config);
    if (!user) throw unauthorized('Sign in first: this endpoint needs a dashboard session');
    if (!sentByAScript(ctx))
      throw forbidden(
        'A change made with the session cookie needs "Content-Type: application/json" or an "X-Requested-With" header (a guard against cross-site forms)',
      );
    ctx.state.user = user;
    await next();
  };
}
