import { UserSchema } from './user';
import { UserTokenSchema } from './userToken';
import { ProjectSchema } from './project';
import { ProjectMemberSchema } from './projectMember';
import { OutboxMessageSchema } from './outboxMessage';

export const allEntities = [UserSchema, UserTokenSchema, ProjectSchema, ProjectMemberSchema, OutboxMessageSchema];
