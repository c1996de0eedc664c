import type { EntityManager } from '@mikro-orm/postgresql';
import { emailFeedbackRepository } from '../../db/emails/emailFeedbackRepository';
import { parseReturnPathAddress } from '../../mail/delivery/returnPath';
import { applyBounce, applyComplaint, type FeedbackServices } from '../sending/emailFeedback';

/**
 * Bounces and complaints that arrive as mail (contract 20): a delivery status notification
 * (`multipart/report; report-type=delivery-status`, RFC 3464) or an abuse report
 * (`report-type=feedback-report`, ARF, RFC 5965) received for a project. The report is matched to
 * the project's sent email it is about and applied through the same service as Amazon SES's
 * notices (services/sending/emailFeedback.ts).
 *
 * It reads the raw message, not the listener's ParsedMail: mailparser folds a
 * `message/delivery-status` part into the text body (where the per-recipient fields can no longer
 * be told from the human explanation) and an inline `message/rfc822` part too (losing the
 * returned message's Message-ID, as ARF reports send it). A report is a flat `multipart/report`
 * (RFC 6522) of which only the top level matters, so it is split here; ordinary mail costs one
 * scan of its header block.
 */

export interface DeliveryReportServices extends FeedbackServices {
  /** RETURN_PATH_SUBDOMAIN: a recipient `bounces+<emailId>@<subdomain>.<domain>` names the email. */
  returnPathSubdomain: string;
  logger: { info: (obj: object, msg: string) => void };
}

export interface ReceivedReport {
  /** The project whose verified domain received the message (one call per project). */
  projectId: string;
  /** The message as received (RFC 5322 bytes, CRLF or LF line ends). */
  raw: Buffer;
  /** This project's envelope recipients (RCPT TO) of the message. */
  recipients: string[];
}

/** A DSN's per-recipient fields (RFC 3464 section 2.3), names lower-cased, folded lines joined. */
type FieldBlock = Map<string, string>;

interface Report {
  type: 'delivery-status' | 'feedback-report';
  /** The report's machine-readable part (message/delivery-status or message/feedback-report), as field blocks. */
  blocks: FieldBlock[];
  /** The header block of the returned message (message/rfc822, text/rfc822-headers), when one is quoted. */
  returnedHeaders: FieldBlock | null;
}

const REPORT_PART_TYPES: Record<Report['type'], string[]> = {
  'delivery-status': ['message/delivery-status', 'message/global-delivery-status'],
  'feedback-report': ['message/feedback-report'],
};
const RETURNED_PART_TYPES = ['message/rfc822', 'message/global', 'text/rfc822-headers', 'message/global-headers'];

/** A DSN field's value after its type (`rfc822; ada@example.org` → `ada@example.org`). */
const typedValue = (value: string | undefined) => value?.replace(/^[^;]*;/, '').trim() || undefined;

/**
 * Applies a report by mail to the email it names. True when the message was a report about one
 * of this project's sent emails: it is feedback, and the caller records no contact, no INBOUND
 * email, no `inbound` count and no `email.received` for it. False for anything else, which the
 * caller records as an ordinary inbound message:
 * - not a DSN or ARF report (other mail, read receipts, `multipart/report` of another type);
 * - a report naming no sent email of this project (none at all, or another project's: it
 *   changes nothing there);
 * - a report about a report (the returned message is itself a `multipart/report`), or one sent
 *   to a return-path address whose email id names nothing here: recorded only, so two systems
 *   bouncing each other's bounces cannot loop through suppressions.
 */
export async function applyDeliveryReport(services: DeliveryReportServices, em: EntityManager, received: ReceivedReport): Promise<boolean> {
  const report = readReport(received.raw);
  if (!report) return false;
  const context = { projectId: received.projectId, reportType: report.type };
  if (report.returnedHeaders && /^\s*multipart\/report\b/i.test(report.returnedHeaders.get('content-type') ?? '')) {
    services.logger.info(context, 'inbound: a report about a report is recorded as a message only');
    return false;
  }

  const email = await namedEmail(services, em, received, report);
  if (!email) {
    services.logger.info(context, 'inbound: a report naming no sent email of this project is recorded as a message');
    return false;
  }
  const emailId = email.id;

  if (report.type === 'feedback-report') {
    const fields = report.blocks[0] ?? new Map<string, string>();
    const feedbackType = fields.get('feedback-type')?.toLowerCase();
    // "not-spam" (RFC 6650) withdraws a complaint rather than making one.
    if (feedbackType === 'not-spam') return true;
    // Original-Rcpt-To is redacted by most mailbox providers (RFC 6590): the email was found by
    // its own id or Message-ID, so the complaint names its recipient, not whatever is written.
    const result = await applyComplaint(services, em, emailId, { recipients: [], feedbackType });
    services.logger.info({ ...context, emailId, result: result.result }, 'inbound: abuse report applied');
    return true;
  }

  const recipient = recipientBlock(email.toAddress, report.blocks);
  if (!recipient) {
    services.logger.info({ ...context, emailId }, 'inbound: a delivery report with no per-recipient fields changes nothing');
    return true;
  }
  const action = recipient.fields.get('action')?.toLowerCase() ?? '';
  const status = /^([245])\.\d{1,3}\.\d{1,3}/.exec(recipient.fields.get('status') ?? '')?.[0];
  // delivered / relayed / expanded (a NOTIFY=SUCCESS answer): good news, nothing to record.
  if (status?.startsWith('2') || ['delivered', 'relayed', 'expanded'].includes(action)) return true;
  const diagnostic = typedValue(recipient.fields.get('diagnostic-code')) ?? (status ? `Status ${status}` : undefined);
  // Only a Status of class 5 proves the address dead; a missing one is undetermined (noted only).
  const bounceType = status?.startsWith('5') ? 'Permanent' : status?.startsWith('4') ? 'Transient' : 'Undetermined';
  const result = await applyBounce(services, em, emailId, {
    bounceType,
    bounceSubType: status,
    recipients: recipient.addresses.map((email) => ({ email, diagnostic })),
  });
  services.logger.info({ ...context, emailId, bounceType, status, result: result.result }, 'inbound: delivery report applied');
  return true;
}

/** A report's top-level parts: their header fields and their bodies, transfer encoding undone. */
interface Part {
  fields: FieldBlock;
  body: string;
}

/**
 * The report in a message, when its top-level Content-Type is `multipart/report` of a type read
 * here, with its machine-readable part. RFC 6522 puts a report at the top level with its parts
 * side by side (human text, the report, the returned message), so only that level is split.
 */
function readReport(raw: Buffer): Report | null {
  const text = raw.toString('latin1');
  const { head, body } = splitHead(text);
  const fields = readFieldBlock(head);
  const contentType = fields.get('content-type') ?? '';
  if (!/^\s*multipart\/report\s*(;|$)/i.test(contentType)) return null;
  const reportType = parameter(contentType, 'report-type')?.toLowerCase();
  if (reportType !== 'delivery-status' && reportType !== 'feedback-report') return null;
  const boundary = parameter(contentType, 'boundary');
  if (!boundary) return null;
  const parts = splitParts(body, boundary);
  const partOf = (types: string[]) => parts.find((part) => types.includes(mediaType(part.fields)));
  const reportPart = partOf(REPORT_PART_TYPES[reportType]);
  if (!reportPart) return null;
  const returned = partOf(RETURNED_PART_TYPES);
  return {
    type: reportType,
    blocks: readFieldBlocks(reportPart.body),
    returnedHeaders: returned ? readFieldBlock(splitHead(returned.body).head) : null,
  };
}

/** A message or part's header block and body, split at the first empty line. */
function splitHead(text: string): { head: string; body: string } {
  const blank = /\r?\n\r?\n/.exec(text);
  if (!blank) return { head: text, body: '' };
  return { head: text.slice(0, blank.index), body: text.slice(blank.index + blank[0].length) };
}

/** A Content-Type parameter's value (quoted or a token). */
function parameter(contentType: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))`, 'i').exec(contentType);
  return match ? (match[1] ?? match[2]) : undefined;
}

const mediaType = (fields: FieldBlock) => (fields.get('content-type') ?? 'text/plain').split(';')[0].trim().toLowerCase();

/**
 * The parts between the boundary's delimiter lines (RFC 2046 5.1.1), each body decoded from its
 * Content-Transfer-Encoding and read as UTF-8 (report fields and header blocks are ASCII or UTF-8).
 */
function splitParts(body: string, boundary: string): Part[] {
  const lines = body.split(/\r?\n/);
  const delimiter = `--${boundary}`;
  const parts: string[][] = [];
  let current: string[] | null = null;
  for (const line of lines) {
    const trimmed = line.trimEnd();
    if (trimmed === `${delimiter}--`) break;
    if (trimmed === delimiter) {
      current = [];
      parts.push(current);
    } else current?.push(line);
  }
  return parts.map((partLines) => {
    const { head, body: content } = splitHead(partLines.join('\r\n'));
    const fields = readFieldBlock(head);
    return { fields, body: decodeBody(content, fields.get('content-transfer-encoding')?.toLowerCase()) };
  });
}

function decodeBody(content: string, encoding: string | undefined): string {
  const bytes =
    encoding === 'base64'
      ? Buffer.from(content.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64')
      : encoding === 'quoted-printable'
        ? Buffer.from(
            content.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          )
        : Buffer.from(content, 'latin1');
  return bytes.toString('utf8');
}

/** RFC 5322 style fields, continuation lines unfolded; the first of a repeated name wins. */
function readFieldBlock(text: string): FieldBlock {
  const fields: FieldBlock = new Map();
  const unfolded = text.replace(/\r?\n[ \t]+/g, ' ');
  for (const line of unfolded.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
  }
  return fields;
}

/** A report part's field blocks, separated by empty lines: per-message first, then per-recipient (RFC 3464 2.1). */
function readFieldBlocks(text: string): FieldBlock[] {
  return text
    .split(/\r?\n(?:[ \t]*\r?\n)+/)
    .map(readFieldBlock)
    .filter((block) => block.size > 0);
}

/**
 * The email a report is about. A return-path recipient names it by id, with or without quoted
 * headers, and then decides alone (its id naming nothing here means the report names nothing);
 * otherwise the returned message's Message-ID, matched within this project only.
 */
async function namedEmail(
  services: DeliveryReportServices,
  em: EntityManager,
  received: ReceivedReport,
  report: Report,
): Promise<{ id: string; toAddress: string } | null> {
  for (const recipient of received.recipients) {
    const returnPath = parseReturnPathAddress(recipient, services.returnPathSubdomain);
    if (returnPath) return emailFeedbackRepository.findSentEmailOfProject(em, received.projectId, { emailId: returnPath.emailId });
  }
  // Gmail also names the message in the report's own fields, so a report quoting nothing is matched too.
  const messageId = report.returnedHeaders?.get('message-id') ?? report.blocks[0]?.get('x-original-message-id');
  if (!messageId) return null;
  return emailFeedbackRepository.findSentEmailOfProject(em, received.projectId, { messageId });
}

/**
 * The DSN's per-recipient block about the email's recipient (by Final- or Original-Recipient),
 * else the only one. Its addresses go with the bounce, so the feedback service's recipient check
 * holds: a report never suppresses an address the email was not sent to.
 */
function recipientBlock(toAddress: string, blocks: FieldBlock[]): { fields: FieldBlock; addresses: string[] } | null {
  const perRecipient = blocks.filter((block) => block.has('final-recipient') || block.has('original-recipient'));
  if (!perRecipient.length) return null;
  const to = toAddress.trim().toLowerCase();
  const addressesOf = (block: FieldBlock) =>
    [typedValue(block.get('final-recipient')), typedValue(block.get('original-recipient'))].filter((a): a is string => !!a).map((a) => a.replace(/^<|>$/g, ''));
  const own = perRecipient.find((block) => addressesOf(block).some((a) => a.toLowerCase() === to));
  const fields = own ?? (perRecipient.length === 1 ? perRecipient[0] : null);
  return fields ? { fields, addresses: addressesOf(fields) } : null;
}
