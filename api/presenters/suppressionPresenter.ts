import type { Suppression } from '../../db/emails/suppressionRepository';

/** A suppression list entry (contract 20). */
export function serializeSuppression(entry: Suppression) {
  return { email: entry.email, reason: entry.reason, emailId: entry.emailId, createdAt: entry.createdAt };
}
