/** What GET /config reports of the SMTP roles (contract 20): each true while it listens. */
export interface SmtpListenerStatus {
  inbound: boolean;
  submission: boolean;
}
