import os from 'node:os';
import { Algorithm, hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';
import { verify as bcryptVerify } from '@node-rs/bcrypt';
import { Semaphore } from './semaphore';

/**
 * Password hashes. New hashes are argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane);
 * hashes made before (bcrypt, cost 11) still verify and are replaced at the next successful login.
 * Both libraries are native and run on libuv's thread pool, so a burst of logins queues there
 * instead of blocking the event loop (and with it /health and every other request).
 */
/**
 * Hashes running at once. Each one keeps a core busy for its whole duration; leaving one core
 * (and one of libuv's 4 threads, which file and DNS work share) free keeps the event loop and
 * the other requests answering during a login flood, at the price of queueing the logins.
 */
const hashing = new Semaphore(Math.max(1, Math.min(os.availableParallelism() - 1, 3)));

const ARGON2_OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;
const CURRENT_PREFIX = `$argon2id$v=19$m=${ARGON2_OPTIONS.memoryCost},t=${ARGON2_OPTIONS.timeCost},p=${ARGON2_OPTIONS.parallelism}$`;

// Passwords longer than 72 bytes (bcrypt's limit) are refused where they are parsed: shared/accountSchemas.ts.

export function hashPassword(password: string): Promise<string> {
  return hashing.run(() => argon2Hash(password, ARGON2_OPTIONS));
}

export interface PasswordCheck {
  ok: boolean;
  /** The stored hash is bcrypt or older argon2 parameters: store a fresh hash after this login. */
  needsRehash: boolean;
}

export async function verifyPassword(password: string, storedHash: string): Promise<PasswordCheck> {
  if (storedHash.startsWith('$argon2')) {
    const ok = await hashing.run(() => argon2Verify(storedHash, password)).catch(() => false);
    return { ok, needsRehash: ok && !storedHash.startsWith(CURRENT_PREFIX) };
  }
  if (/^\$2[aby]\$/.test(storedHash)) {
    const ok = await hashing.run(() => bcryptVerify(password, storedHash)).catch(() => false);
    return { ok, needsRehash: ok };
  }
  return { ok: false, needsRehash: false };
}

// Checked against when the email is unknown, so a login costs the same either way. Made when the
// process starts, so the first unknown email does not pay for it.
const dummyHash = hashPassword('mailroom-timing-equaliser');
export async function burnPasswordCheck(password: string): Promise<void> {
  const hash = await dummyHash;
  await hashing.run(() => argon2Verify(hash, password)).catch(() => false);
}
