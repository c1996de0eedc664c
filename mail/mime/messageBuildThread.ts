import { buildMessage, type BuiltMessage } from './messageBuilder';
import type { OutgoingMail } from './outgoingMail';

/** One message's result on its way back from a build thread: a thrown error travels as its message. */
export type BuildOutcome = { ok: true; message: BuiltMessage } | { ok: false; error: string };

/** What a build thread runs (messageBuildPool.ts): every message of one hand-over, each on its own. */
export default function buildMessages(mails: OutgoingMail[]): BuildOutcome[] {
  return mails.map((mail) => {
    try {
      return { ok: true, message: buildMessage(withBuffers(mail)) };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  });
}

/** Buffers (attachment contents) arrive on a thread as plain Uint8Arrays over the same bytes: Buffers again. */
function withBuffers(mail: OutgoingMail): OutgoingMail {
  if (!mail.attachments?.length) return mail;
  return {
    ...mail,
    attachments: mail.attachments.map((a) => {
      const content: Uint8Array = a.content;
      return Buffer.isBuffer(content) ? a : { ...a, content: Buffer.from(content.buffer, content.byteOffset, content.byteLength) };
    }),
  };
}
