import { escapeAttribute } from './linkTracking';

/** The small, neutral footer MARKETING mail gets when its body has no unsubscribe link of its own. */
export function unsubscribeFooter(unsubscribeUrl: string): string {
  const href = escapeAttribute(unsubscribeUrl);
  return (
    '<div style="margin:24px auto 0;padding:16px;max-width:600px;font-family:Arial,Helvetica,sans-serif;font-size:12px;line-height:18px;color:#8a8a8a;text-align:center;">' +
    `You are receiving this email because you subscribed to it. <a href="${href}" style="color:#8a8a8a;text-decoration:underline;">Unsubscribe</a>` +
    '</div>'
  );
}
