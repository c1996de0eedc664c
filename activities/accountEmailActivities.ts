import { UserTokenSchema } from '../db/entities/userToken';
import { UserSchema } from '../db/entities/user';
import { deriveUserToken } from '../db/repositories/userRepository';
import { accountEmailContent } from '../mail/accountEmails';
import type { ActivityDeps } from './deps';
import { rethrowMailFailure } from './mailFailures';

export function createAccountEmailActivities({ orm, mail, config }: ActivityDeps) {
  return {
    /** Sends the mail for one issued token; a token already used or expired is not worth sending. */
    async sendAccountEmail(tokenId: string): Promise<{ sent: boolean; messageId?: string }> {
      const em = orm.em.fork();
      const token = await em.findOne(UserTokenSchema, { id: tokenId });
      if (!token || token.usedAt || token.expiresAt.getTime() < Date.now()) return { sent: false };
      const user = await em.findOne(UserSchema, { id: token.userId });
      if (!user) return { sent: false };
      const content = accountEmailContent(token.purpose, deriveUserToken(config.secret, token.id), config.publicUrl);
      const host = new URL(config.publicUrl).hostname;
      try {
        const sent = await mail.send({
          projectId: null,
          from: config.mailFrom,
          to: [user.email],
          subject: content.subject,
          text: content.text,
          html: content.html,
          messageId: `<account-${token.id}@${host}>`,
        });
        return { sent: true, messageId: sent.messageId };
      } catch (err) {
        rethrowMailFailure(err);
      }
    },
  };
}
export type AccountEmailActivities = ReturnType<typeof createAccountEmailActivities>;
