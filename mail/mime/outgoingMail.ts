import type { KeyObject } from 'node:crypto';

/** A message to send, as the senders describe it; `buildMessage` turns it into signed MIME bytes. */
export interface OutgoingMail {
  /** The project the mail belongs to; null for Mailroom's own account mail. */
  projectId: string | null;
  /** An address, `Name <address>`, or a display name and address (the builder encodes the name). */
  from: string | { name: string; address: string };
  /** Each an address or `Name <address>` (a display name with specials quoted), or a display name and address. */
  to: Array<string | { name: string; address: string }>;
  /**
   * The To and Cc fields as a relayed message wrote them (address lists): shown instead of `to`,
   * while the envelope still carries only `to` (each recipient's copy differs only in its envelope).
   */
  shownTo?: string;
  cc?: string;
  replyTo?: string;
  subject: string;
  html?: string;
  text?: string;
  headers?: Record<string, string>;
  /** Deterministic per email (`<id@host>`), so a retried delivery can be recognised as the same message. */
  messageId: string;
  /**
   * SMTP MAIL FROM, where bounces go (the return path, contract 20); the From address when unset.
   * Never written into the message: relays add Return-Path from the envelope.
   */
  envelopeFrom?: string;
  attachments?: Array<{ filename: string; content: Buffer; contentType?: string; cid?: string; contentDisposition?: 'attachment' | 'inline' }>;
  dkim?: { domainName: string; keySelector: string; privateKey: string | KeyObject; headerFieldNames?: string };
}
