import bcrypt from 'bcryptjs';

const ROUNDS = 11;

/** bcrypt reads at most 72 bytes; longer passwords are refused rather than silently truncated. */
export const MAX_PASSWORD_BYTES = 72;

export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, ROUNDS);
}

export function verifyPassword(password: string, hash: string): Promise<boolean> {
  return bcrypt.compare(password, hash);
}

// Compared against when the email is unknown, so a login takes as long either way.
const dummyHash = bcrypt.hashSync('mailroom-timing-equaliser', ROUNDS);
export function burnPasswordCheck(password: string): Promise<boolean> {
  return bcrypt.compare(password, dummyHash);
}
