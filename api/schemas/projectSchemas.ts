import { z } from './zod';
import { id, nullableTimestamp, timestamp } from './responseFields';
import { memberRoles } from '../../shared/projectSchemas';

// The request bodies live in shared/ (the dashboard's forms validate with them too).
export { projectBody, projectPatchBody, addMemberBody, updateMemberBody } from '../../shared/projectSchemas';

/**
 * `timestamp.nullable()` alone is described as a non-null string: the generator keeps the
 * timestamp's own `type` and drops the null, so the type is written out here.
 */

export const memberRole = z.enum(memberRoles).openapi('MemberRole');

/** A project's fields as the dashboard sees them: never the secret key, only its last characters. */
const projectFields = {
  id,
  name: z.string(),
  publicKey: z.string(),
  secretKeyHint: z.string().openapi({ example: 'sk_…3f9a' }),
  disabled: z.boolean(),
  /** Why the project is disabled (PAYMENT_FAILED), null when it is not. */
  disabledReason: z.string().nullable(),
  /** The project's cap on campaign mail per second; null: the instance's CAMPAIGN_RATE_PER_SECOND. */
  campaignRatePerSecond: z.number().int().nullable(),
  keysRotatedAt: nullableTimestamp,
  createdAt: timestamp,
  updatedAt: timestamp,
};

/** A project (PATCH /users/@me/projects/:id). */
export const projectResponse = z.object(projectFields).strict().openapi('Project');

/** A project of the signed-in user, with their role in it (GET /users/@me/projects). */
export const projectMembershipResponse = z
  .object({ ...projectFields, role: memberRole })
  .strict()
  .openapi('ProjectMembership');

export const projectMembershipListResponse = z.array(projectMembershipResponse);

/** A project just created: its owner's view plus the secret key, shown this once. */
export const createdProjectResponse = z
  .object({ ...projectFields, role: memberRole, secretKey: z.string() })
  .strict()
  .openapi('CreatedProject');

/** New API keys: the secret key is shown this once. */
export const projectKeysResponse = z.object({ publicKey: z.string(), secretKey: z.string() }).strict();

export const webhookSecretResponse = z.object({ webhookSecret: z.string() }).strict();

/** POST /users/@me/projects/:id/reset: rows deleted, per table. */
export const projectResetResponse = z.object({ success: z.literal(true), projectId: id, deleted: z.record(z.number().int()) }).strict();

/** A project's security overview (services/projects/projectSecurity.ts). */
export const projectSecurityResponse = z
  .object({
    projectId: id,
    disabled: z.boolean(),
    yourRole: memberRole,
    keys: z
      .object({
        publicKey: z.string(),
        secretKeyHint: z.string(),
        secretKeyStoredAs: z.literal('sha256'),
        createdAt: timestamp,
        lastRotatedAt: nullableTimestamp,
      })
      .strict(),
    members: z.object({ total: z.number().int(), owners: z.number().int(), admins: z.number().int() }).strict(),
    webhooks: z
      .object({
        signatureHeader: z.string(),
        /** Shown to OWNER and ADMIN members only; null for MEMBER. */
        signingSecret: z.string().nullable(),
        signingSecretVisibleTo: z.array(memberRole).readonly(),
      })
      .strict(),
    rateLimit: z.object({ perMinute: z.number().int(), usedThisMinute: z.number().int() }).strict(),
    idempotencyKeyTtlHours: z.number(),
    signupsDisabled: z.boolean(),
  })
  .strict()
  .openapi('ProjectSecurity');

/** A project's onboarding checklist (services/projects/projectSetupState.ts). */
export const projectSetupStateResponse = z
  .object({
    projectId: id,
    steps: z
      .object({
        projectCreated: z.boolean(),
        emailVerified: z.boolean(),
        teamInvited: z.boolean(),
        domainVerified: z.boolean(),
        templateCreated: z.boolean(),
        firstEmailSent: z.boolean(),
        /** Only when billing is on (STRIPE_SECRET_KEY): the project has a paying subscription. */
        subscriptionActive: z.boolean().optional(),
      })
      .strict(),
    completed: z.number().int(),
    total: z.number().int(),
    complete: z.boolean(),
  })
  .strict()
  .openapi('ProjectSetupState');

/** A member of a project: an existing Mailroom account and its role. */
export const memberResponse = z.object({ userId: id, email: z.string(), role: memberRole, createdAt: timestamp }).strict().openapi('ProjectMember');

export const memberListResponse = z.array(memberResponse);
