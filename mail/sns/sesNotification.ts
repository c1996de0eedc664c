/**
 * The Amazon SES notification inside an SNS Notification's `Message`, reduced to what Mailroom
 * acts on. SES sends two flavours: identity notifications (`notificationType`) and configuration
 * set event publishing (`eventType`); both carry `mail`, and `delivery` / `bounce` / `complaint`.
 */
export interface SesMailIds {
  /** SES's own message id (what its SMTP interface answered); stored as emails.provider_message_id. */
  providerMessageId?: string;
  /** Our Message-ID header, as SES saw it. */
  messageId?: string;
}

export type SesNotification =
  | { kind: 'Delivery'; ids: SesMailIds }
  | { kind: 'Bounce'; ids: SesMailIds; bounceType: string; bounceSubType?: string; recipients: Array<{ email: string; diagnostic?: string }> }
  | { kind: 'Complaint'; ids: SesMailIds; recipients: string[]; feedbackType?: string }
  | { kind: 'Other'; type: string };

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const obj = (value: unknown): Record<string, any> => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, any>) : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

function mailIds(mail: Record<string, any>): SesMailIds {
  const header = list(mail.headers).find((h) => typeof obj(h).name === 'string' && obj(h).name.toLowerCase() === 'message-id');
  return {
    providerMessageId: str(mail.messageId),
    messageId: str(obj(mail.commonHeaders).messageId) ?? str(obj(header).value),
  };
}

/** Null when `message` is not an SES notification at all (another publisher on the topic). */
export function parseSesNotification(message: string): SesNotification | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(message);
  } catch {
    return null;
  }
  const body = obj(parsed);
  const type = str(body.notificationType) ?? str(body.eventType);
  if (!type || !body.mail) return null;
  const ids = mailIds(obj(body.mail));
  switch (type) {
    case 'Delivery':
      return { kind: 'Delivery', ids };
    case 'Bounce': {
      const bounce = obj(body.bounce);
      return {
        kind: 'Bounce',
        ids,
        bounceType: str(bounce.bounceType) ?? 'Undetermined',
        bounceSubType: str(bounce.bounceSubType),
        recipients: list(bounce.bouncedRecipients).flatMap((r) => {
          const email = str(obj(r).emailAddress);
          return email ? [{ email, diagnostic: str(obj(r).diagnosticCode) }] : [];
        }),
      };
    }
    case 'Complaint': {
      const complaint = obj(body.complaint);
      return {
        kind: 'Complaint',
        ids,
        recipients: list(complaint.complainedRecipients)
          .map((r) => str(obj(r).emailAddress))
          .filter((r): r is string => r !== undefined),
        feedbackType: str(complaint.complaintFeedbackType),
      };
    }
    default:
      return { kind: 'Other', type };
  }
}
