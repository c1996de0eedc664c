import jwt from 'jsonwebtoken';
import type { Middleware } from 'koa';
import type { Config } from '../../lib/config';
import type { AppContext, AppState } from '../state';
import { unauthorized } from '../http/errors';
import { userRepository } from '../../db/repositories/userRepository';
import type { User } from '../../db/entities/user';

export const SESSION_COOKIE = 'mailroom_session';
const SESSION_TTL_SECONDS = 7 * 24 * 3600;

interface SessionClaims {
  sub: string;
  /** The user's session epoch when issued; a password reset bumps it and so ends older sessions. */
  ep: number;
}

export function setSessionCookie(ctx: AppContext, config: Config, user: User): void {
  const token = jwt.sign({ sub: user.id, ep: user.sessionEpoch } satisfies SessionClaims, config.secret, {
    algorithm: 'HS256',
    expiresIn: SESSION_TTL_SECONDS,
  });
  const secure = config.publicUrl.startsWith('https://');
  // TLS is terminated in front of Mailroom when PUBLIC_URL is https; tell the cookie jar so.
  if (secure) (ctx.cookies as unknown as { secure: boolean }).secure = true;
  ctx.cookies.set(SESSION_COOKIE, token, { httpOnly: true, sameSite: 'lax', secure, maxAge: SESSION_TTL_SECONDS * 1000, overwrite: true, path: '/' });
}

export function clearSessionCookie(ctx: AppContext, config: Config): void {
  const secure = config.publicUrl.startsWith('https://');
  if (secure) (ctx.cookies as unknown as { secure: boolean }).secure = true;
  ctx.cookies.set(SESSION_COOKIE, '', { httpOnly: true, sameSite: 'lax', secure, maxAge: 0, expires: new Date(0), overwrite: true, path: '/' });
}

/** The signed-in user, or null when the cookie is missing, forged, expired or revoked. */
export async function sessionUser(ctx: AppContext, config: Config): Promise<User | null> {
  const token = ctx.cookies.get(SESSION_COOKIE);
  if (!token) return null;
  let claims: SessionClaims;
  try {
    claims = jwt.verify(token, config.secret, { algorithms: ['HS256'] }) as unknown as SessionClaims;
  } catch {
    return null;
  }
  if (typeof claims.sub !== 'string' || typeof claims.ep !== 'number') return null;
  const user = await userRepository.findById(ctx.state.em, claims.sub);
  return user && user.sessionEpoch === claims.ep ? user : null;
}

export function requireUser(config: Config): Middleware<AppState> {
  return async (ctx, next) => {
    const user = await sessionUser(ctx, config);
    if (!user) throw unauthorized('Sign in first: this endpoint needs a dashboard session');
    ctx.state.user = user;
    await next();
  };
}
