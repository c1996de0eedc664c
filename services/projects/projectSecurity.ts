import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../lib/config';
import type { Project } from '../../db/entities/project';
import type { MemberRole } from '../../db/entities/projectMember';
import { memberRepository } from '../../db/repositories/memberRepository';
import { rateLimitRepository } from '../../db/repositories/rateLimitRepository';
import { webhookSecretRepository } from '../../db/repositories/webhookSecretRepository';
import { webhookSignatureHeader } from '../../lib/webhooks/webhookSignature';

/** Who may read the webhook signing secret: the roles that may also rotate the API keys. */
const webhookSecretReaders: readonly MemberRole[] = ['OWNER', 'ADMIN'];

/**
 * A project's security overview: its keys (never the secret itself), who has access, and the
 * limits that protect it. Served at /users/@me/projects/:id/security and /projects/:id/security.
 * The webhook signing secret is shown to OWNER and ADMIN members only (MEMBER sees null): whoever
 * holds it can forge requests that the project's own receivers accept as Mailroom's.
 */
export async function projectSecurity(em: EntityManager, config: Config, project: Project, role: MemberRole) {
  const members = await memberRepository.roleCounts(em, project.id);
  return {
    projectId: project.id,
    disabled: project.disabled,
    yourRole: role,
    keys: {
      publicKey: project.publicKey,
      secretKeyHint: `sk_…${project.secretKeyHint}`,
      secretKeyStoredAs: 'sha256' as const,
      createdAt: project.createdAt,
      lastRotatedAt: project.keysRotatedAt ?? null,
    },
    members,
    webhooks: {
      signatureHeader: webhookSignatureHeader,
      signingSecret: webhookSecretReaders.includes(role) ? await webhookSecretRepository.find(em, project.id) : null,
      signingSecretVisibleTo: webhookSecretReaders,
    },
    rateLimit: { perMinute: config.rateLimitPerMinute, usedThisMinute: await rateLimitRepository.usedNow(em, project.id) },
    idempotencyKeyTtlHours: config.idempotencyKeyTtlHours,
    signupsDisabled: config.disableSignups,
  };
}
