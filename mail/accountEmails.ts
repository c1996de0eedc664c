import type { UserTokenPurpose } from '../db/entities/userToken';

export interface AccountEmailContent {
  subject: string;
  text: string;
  html: string;
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The text of Mailroom's own account mails. The token is also shown on its own so API users can paste it. */
export function accountEmailContent(purpose: UserTokenPurpose, token: string, publicUrl: string): AccountEmailContent {
  if (purpose === 'VERIFY_EMAIL') {
    // The dashboard's page sends the token to POST /auth/verify-email; GET /auth/verify-email, the
    // link of earlier mails, still works.
    const link = `${publicUrl}/app/verify-email?token=${encodeURIComponent(token)}`;
    return {
      subject: 'Verify your Mailroom email address',
      text: `Confirm your email address by opening this link:\n\n${link}\n\nOr send this token to POST /auth/verify-email:\n${token}\n\nThe link expires in 24 hours.`,
      html: `<p>Confirm your email address by opening this link:</p><p><a href="${escapeHtml(link)}">Verify my email address</a></p><p>Or send this token to <code>POST /auth/verify-email</code>: <code>${escapeHtml(token)}</code></p><p>The link expires in 24 hours.</p>`,
    };
  }
  // The dashboard's page takes the token from the link and asks only for the new password.
  const link = `${publicUrl}/app/reset-password?token=${encodeURIComponent(token)}`;
  return {
    subject: 'Reset your Mailroom password',
    text: `Someone asked to reset the password of this Mailroom account. If it was you, choose a new password here:\n\n${link}\n\nOr send this token with your new password to POST /auth/reset-password:\n${token}\n\nThe link expires in 1 hour and works once. If it was not you, ignore this mail.`,
    html: `<p>Someone asked to reset the password of this Mailroom account. If it was you, choose a new password here:</p><p><a href="${escapeHtml(link)}">Choose a new password</a></p><p>Or send this token with your new password to <code>POST /auth/reset-password</code>: <code>${escapeHtml(token)}</code></p><p>The link expires in 1 hour and works once. If it was not you, ignore this mail.</p>`,
  };
}
