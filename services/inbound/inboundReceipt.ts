import type { InboundRecipient, ProviderReceipt } from '../../db/inbound/inboundMessageRepository';
import { MAX_INBOUND_RECIPIENTS, type InboundRecipients } from './inboundRecipients';
import type { InboundReception } from './inboundReception';

/**
 * Mail a provider received and handed to Mailroom (contract 20, "SES users"): the reception of
 * the inbound SMTP listener, so a message from SES is stored, processed, counted and announced
 * exactly as one that arrived over SMTP. The route validates the provider's notification
 * (api/routes/snsWebhookRoutes.ts); this decides who receives the message and stores it.
 */
export interface InboundServices {
  recipients: InboundRecipients;
  reception: InboundReception;
}

export interface ProviderMessage {
  raw: Buffer;
  /** The envelope sender the provider saw; empty for the null sender. */
  mailFrom: string;
  /** The addresses the provider received the message for. */
  recipients: string[];
  provider: ProviderReceipt;
}

export type InboundReceiptResult =
  { stored: true; messageId: string; duplicate: boolean; recipients: InboundRecipient[]; refused: string[] } | { stored: false; refused: string[] };

/**
 * Stores a received message for those of its recipients Mailroom receives mail for (at most
 * MAX_INBOUND_RECIPIENTS, each once, letter case of the domain ignored); the others are refused,
 * as the SMTP listener refuses them (no relaying). A project at its `inbound` cap is not refused:
 * the provider took the message already. Nothing is stored when no recipient is left; a message
 * the provider handed over before is not stored again (`duplicate`, with the stored one's id).
 * Rejects when the lookup or the store fails (the database away): the caller answers so the
 * provider delivers the notice again.
 */
export async function receiveInboundMessage(services: InboundServices, message: ProviderMessage): Promise<InboundReceiptResult> {
  const seen = new Set<string>();
  const accepted: InboundRecipient[] = [];
  const refused: string[] = [];
  for (const address of message.recipients) {
    const verdict = accepted.length < MAX_INBOUND_RECIPIENTS ? await services.recipients.whoReceives(address) : null;
    if (!verdict?.accepted) {
      refused.push(address);
      continue;
    }
    const key = verdict.address.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    accepted.push({ address: verdict.address, projectIds: verdict.projectIds, returnPath: verdict.returnPath });
  }
  if (!accepted.length) return { stored: false, refused };
  const stored = await services.reception.store(message.raw, {
    mailFrom: message.mailFrom,
    recipients: accepted,
    remoteAddress: '',
    helo: '',
    provider: message.provider,
  });
  return { stored: true, messageId: stored.id, duplicate: stored.duplicate, recipients: accepted, refused };
}
