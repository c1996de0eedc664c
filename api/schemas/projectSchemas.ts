import { z } from 'zod';
import { emailAddress, singleLineString } from './commonFields';
import { memberRoles } from '../../db/entities/projectMember';

const memberRole = z.enum(memberRoles);

export const addMemberBody = z.object({ email: emailAddress, role: memberRole.default('MEMBER') });

export const updateMemberBody = z.object({ role: memberRole });

export const projectBody = z.object({ name: singleLineString(100) });

/** PATCH: the name, and the project's cap on campaign mail per second (null lifts it). */
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
