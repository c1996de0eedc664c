/** What GET /config reports of the SMTP roles (contract 20): each true while it listens. */
export interface SmtpListenerStatus {
  inbound: boolean;
  submission: boolean;
  /** The submission listener's port while it listens (a test's may be any free port), else null. */
  submissionPort: number | null;
}
