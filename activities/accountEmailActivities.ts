import { UserTokenSchema } from '../db/entities/userToken';
import type { UserTokenPurpose } from '../db/entities/userToken';
import { UserSchema } from '../db/entities/user';
import { deriveUserToken, userRepository, type IssueTokenResult } from '../db/repositories/userRepository';
import { accountEmailContent } from '../mail/accountEmails';
import type { ActivityDeps } from './deps';
import { rethrowMailFailure } from './mailFailures';

/** A request for an account mail as the API queues it: nothing here tells whether the account exists. */
export interface AccountEmailRequest {
  /** Random per request; becomes the token's row id, so a retried activity finds its own token. */
  requestId: string;
  email: string;
  purpose: UserTokenPurpose;
}

export function createAccountEmailActivities({ orm, mail, config, logger }: ActivityDeps) {
  return {
    /** Issues the token to mail, unless there is no such account, it is already verified, or its mail limit is reached. */
    async issueAccountEmailToken(request: AccountEmailRequest): Promise<IssueTokenResult> {
      const result = await userRepository.issueMailedToken(orm.em.fork(), config.secret, request.requestId, request.email, request.purpose);
      if (!result.issued && result.reason === 'MAIL_LIMIT_REACHED') {
        logger.warn({ purpose: request.purpose, requestId: request.requestId }, 'account mail limit reached; nothing sent');
      }
      return result;
    },

    /** Sends the mail for one issued token; a token already used, retired or expired is not worth sending. */
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
