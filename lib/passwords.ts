import { Algorithm, hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';
import { verify as bcryptVerify } from '@node-rs/bcrypt';

/**
 * Password hashes. New hashes are argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane);
 * hashes made before (bcrypt, cost 11) still verify and are replaced at the next successful login.
 * Both libraries are native and run on libuv's thread pool, so a burst of logins queues there
 * instead of blocking the event loop (and with it /health and every other request).
 */
const ARGON2_OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;
const CURRENT_PREFIX = `$argon2id$v=19$m=${ARGON2_OPTIONS.memoryCost},t=${ARGON2_OPTIONS.timeCost},p=${ARGON2_OPTIONS.parallelism}$`;

/** Kept from the bcrypt days (bcrypt reads at most 72 bytes): longer passwords are refused, not truncated. */
export const MAX_PASSWORD_BYTES = 72;

export function hashPassword(password: string): Promise<string> {
  return argon2Hash(password, ARGON2_OPTIONS);
}

export interface PasswordCheck {
  ok: boolean;
  /** The stored hash is bcrypt or older argon2 parameters: store a fresh hash after this login. */
  needsRehash: boolean;
}

export async function verifyPassword(password: string, storedHash: string): Promise<PasswordCheck> {
  if (storedHash.startsWith('$argon2')) {
    const ok = await argon2Verify(storedHash, password).catch(() => false);
    return { ok, needsRehash: ok && !storedHash.startsWith(CURRENT_PREFIX) };
  }
  if (/^\$2[aby]\$/.test(storedHash)) {
    const ok = await bcryptVerify(password, storedHash).catch(() => false);
    return { ok, needsRehash: ok };
  }
  return { ok: false, needsRehash: false };
}

// Checked against when the email is unknown (or the attempt cannot succeed), so a login costs the same either way.
let dummyHash: Promise<string> | undefined;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummyHash ??= hashPassword('mailroom-timing-equaliser');
  await argon2Verify(await dummyHash, password).catch(() => false);
}
