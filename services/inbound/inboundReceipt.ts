/**
 * Mail received by a provider and handed to Mailroom (contract 20, "SES users"): the same
 * reception as the inbound SMTP listener's, so a message from SES is stored, processed, counted
 * and announced exactly as one that arrived over SMTP. The route validates the provider's
 * notification (api/routes/snsWebhookRoutes.ts); this decides who receives the message and hands
 * it to the reception the listener uses.
 *
 * The two ports are the inbound listener's own pieces (services/inbound/inboundRecipients.ts and
 * inboundReception.ts): their shapes are declared here so this side compiles and is tested
 * without them, and they are passed in where the API is built (ApiDeps.inboundReceipt).
 */

/** Mailroom never takes more recipients for one message (the SMTP listener's RCPT bound). */
export const MAX_RECEIPT_RECIPIENTS = 50;

/** One recipient a message is stored for, and the projects whose copies it makes. */
export interface ReceiptRecipient {
  address: string;
  projectIds: string[];
  /** Addressed to `<RETURN_PATH_SUBDOMAIN>.<verified domain>`: a bounce of our own mail. */
  returnPath: boolean;
}

/** What is stored with the message: the SMTP listener's envelope, plus where a provider's message came from. */
export interface ReceiptEnvelope {
  mailFrom: string;
  recipients: ReceiptRecipient[];
  remoteAddress: string;
  helo: string;
  /** Set for a message a provider received (SES): its id and verdicts, for the record and for deduplication. */
  provider?: { name: 'ses'; messageId: string; verdicts: Record<string, string | undefined> };
}

export interface InboundReceiptPorts {
  /**
   * Who receives mail at an address: the projects that verified its domain (or whose verified
   * domain it is the return-path subdomain of); null for any other address. Unlike RCPT over
   * SMTP, a project at its `inbound` cap is included: SES already took the message and cannot be
   * told to retry, so processing records it without an event and says why (contract 20).
   */
  projectsReceiving(address: string): Promise<ReceiptRecipient | null>;
  /** Stores the message durably and schedules its processing; resolves with its id once committed. */
  store(raw: Buffer, envelope: ReceiptEnvelope): Promise<string>;
}

export interface InboundMessageIn {
  raw: Buffer;
  mailFrom: string;
  recipients: string[];
  remoteAddress: string;
  helo: string;
  provider?: ReceiptEnvelope['provider'];
}

export type InboundReceiptResult =
  { stored: true; messageId: string; recipients: ReceiptRecipient[]; refused: string[] } | { stored: false; refused: string[] };

/**
 * Hands a received message to the inbound reception for those of its recipients Mailroom
 * receives mail for (at most 50, each once, letter case of the domain ignored); the others are
 * refused, as the SMTP listener refuses them (no relaying). Nothing is stored when none is left.
 * Rejects when the store fails (the database away): the caller answers so the sender retries.
 */
export async function receiveInboundMessage(ports: InboundReceiptPorts, message: InboundMessageIn): Promise<InboundReceiptResult> {
  const seen = new Set<string>();
  const accepted: ReceiptRecipient[] = [];
  const refused: string[] = [];
  for (const address of message.recipients) {
    const key = address.trim().toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    const recipient = accepted.length < MAX_RECEIPT_RECIPIENTS ? await ports.projectsReceiving(address.trim()) : null;
    if (recipient && recipient.projectIds.length) accepted.push(recipient);
    else refused.push(address);
  }
  if (!accepted.length) return { stored: false, refused };
  const envelope: ReceiptEnvelope = {
    mailFrom: message.mailFrom,
    recipients: accepted,
    remoteAddress: message.remoteAddress,
    helo: message.helo,
    ...(message.provider ? { provider: message.provider } : {}),
  };
  const messageId = await ports.store(message.raw, envelope);
  return { stored: true, messageId, recipients: accepted, refused };
}
