import type { z } from 'zod';
import type { Suppression } from '../../db/emails/suppressionRepository';
import type { suppressionResponse } from '../schemas/suppressionSchemas';

/** A suppression list entry (contract 20). */
export function serializeSuppression(entry: Suppression): z.input<typeof suppressionResponse> {
  return { email: entry.email, reason: entry.reason, emailId: entry.emailId, createdAt: entry.createdAt };
}
