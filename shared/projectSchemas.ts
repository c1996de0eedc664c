import { z } from 'zod';
import { emailAddress, singleLineString } from './zodFields';

/**
 * Project request bodies the dashboard's forms validate with, as the API parses them
 * (api/schemas/projectSchemas.ts re-exports them).
 */

/** A member's role in a project, highest first. */
export const memberRoles = ['OWNER', 'ADMIN', 'MEMBER'] as const;

/** POST /users/@me/projects: a new project's name. */
export const projectBody = z.object({ name: singleLineString(100) });

/** PATCH /users/@me/projects/:id: the name, and the project's cap on campaign mail per second (null lifts it). */
export const projectPatchBody = z
  .object({
    name: singleLineString(100).optional(),
    campaignRatePerSecond: z
      .number({ invalid_type_error: 'campaignRatePerSecond must be a whole number or null' })
      .int('campaignRatePerSecond must be a whole number')
      .min(1)
      .max(100000)
      .nullable()
      .optional(),
  })
  .refine((b) => b.name !== undefined || b.campaignRatePerSecond !== undefined, { message: 'Give name or campaignRatePerSecond' });

/** POST /projects/:id/members: an existing account, by its address. */
export const addMemberBody = z.object({ email: emailAddress, role: z.enum(memberRoles).default('MEMBER') });

/** PATCH /projects/:id/members/:userId. */
export const updateMemberBody = z.object({ role: z.enum(memberRoles) });
