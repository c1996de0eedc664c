import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { memberRoles } from '../../shared/projectSchemas';

export { memberRoles };
export type MemberRole = (typeof memberRoles)[number];

export const ProjectMemberSchema = defineEntity({
  name: 'ProjectMember',
  tableName: 'project_members',
  properties: {
    projectId: p.uuid().primary(),
    userId: p.uuid().primary(),
    role: p.string().columnType('text').$type<MemberRole>(),
    createdAt: p.datetime().columnType('timestamptz').defaultRaw('now()'),
  },
});
export type ProjectMember = InferEntity<typeof ProjectMemberSchema>;
