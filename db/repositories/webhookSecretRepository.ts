import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * The project's webhook secret (projects.webhook_secret): the HMAC key of X-Mailroom-Signature on
 * WEBHOOK step requests. It is kept in clear, unlike the API secret key, because Mailroom signs
 * with it and the project's OWNER and ADMIN members read it to verify (the security overview).
 */
export const webhookSecretRepository = {
  async find(em: EntityManager, projectId: string): Promise<string | null> {
    const rows = await em.execute<Array<{ webhook_secret: string }>>(`select webhook_secret from projects where id = ?`, [projectId]);
    return rows[0]?.webhook_secret ?? null;
  },

  /** A new secret replaces the old one at once; requests signed from then on carry the new one. */
  async rotate(em: EntityManager, projectId: string): Promise<string | null> {
    // Same shape as the column default: whsec_ and 64 hex digits (256 bits).
    const secret = `whsec_${crypto.randomBytes(32).toString('hex')}`;
    const rows = await em.execute(`update projects set webhook_secret = ?, updated_at = now() where id = ? returning id`, [secret, projectId]);
    return rows.length ? secret : null;
  },
};
