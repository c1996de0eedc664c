import crypto from 'node:crypto';
import { createLogger } from '../../lib/logger';
import nodemailer from 'nodemailer';
import { simpleParser, type ParsedMail, type AddressObject } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { buildMessage } from '../../mail/mime/messageBuilder';
import { createMessageBuilder } from '../../mail/mime/messageBuildPool';
import type { OutgoingMail } from '../../mail/mime/outgoingMail';
import { createSmtpTransport } from '../../mail/mailTransport';
import { createDnsResolver } from '../../lib/dns/dnsResolver';
import { dkimRecordValue } from '../../services/domains/domainVerification';
import { startTestDnsServer, type TestDnsServer } from '../support/dnsServer';
import { startSmtpServer, type TestSmtpServer } from '../support/smtpServer';

const DOMAIN = 'builder.example.com';
const SELECTOR = 'mailroomb1';
const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkim = { domainName: DOMAIN, keySelector: SELECTOR, privateKey };

const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const binary = crypto.randomBytes(5000);
const html = '<p>Hello <b>there</b>,  with  double  spaces and a <a href="https://example.com/?a=1&b=2">link</a>.</p>\n<p>Second line</p>';

const base = (over: Partial<OutgoingMail>): OutgoingMail => ({
  projectId: null,
  from: `news@${DOMAIN}`,
  to: ['reader@example.org'],
  subject: 'Hello',
  html,
  text: 'Hello there, with a link: https://example.com/?a=1&b=2\nSecond line',
  messageId: `<${crypto.randomUUID()}@${DOMAIN}>`,
  dkim,
  ...over,
});

const cases: Array<[string, OutgoingMail]> = [
  ['plain ASCII, html and text', base({})],
  [
    'unicode subject and display names',
    base({
      from: { name: 'Jörg Müller', address: `news@${DOMAIN}` },
      to: [{ name: 'Zoë Ådne 😀', address: 'zoe@example.org' }],
      subject: 'Grüße ✉ 😀 Привет',
    }),
  ],
  [
    'quotes, commas and backslashes in display names',
    base({ from: { name: 'Doe, "Jim" \\ Jr.', address: `news@${DOMAIN}` }, to: ['"Doe, Jane" <jane@example.org>', 'Plain Name <plain@example.org>'] }),
  ],
  ['a long ASCII subject', base({ subject: 'This subject goes on '.repeat(12) + 'and ends' })],
  ['a long unicode subject', base({ subject: 'Ünïcödé subject that goes on and on, '.repeat(8) })],
  ['a subject with a 300-character word', base({ subject: 'x'.repeat(300) + ' tail' })],
  ['reply-to', base({ replyTo: 'Support Team <support@example.org>' })],
  [
    'List-Unsubscribe and user headers',
    base({
      headers: {
        'List-Unsubscribe': '<https://mr.example.com/u/abcdef>',
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
        'X-Campaign': 'c-1',
        'x-lower-case': 'value',
        'X-Unicode': 'Grüße',
        'X-Long': 'y'.repeat(998),
        'X-Spaces': 'a  b   c',
      },
    }),
  ],
  ['text only', base({ html: undefined })],
  ['html only', base({ text: undefined })],
  ['lines over 998 characters', base({ html: `<p>${'z'.repeat(3000)}</p>`, text: 'w'.repeat(2500) })],
  ['lone CR and LF in the bodies', base({ html: '<p>a</p>\r<p>b</p>\n<p>c</p>\r\n', text: 'one\rtwo\nthree\r\nfour  \n\n\n' })],
  ['trailing whitespace and tabs', base({ text: 'tab\there \t\nend   ', html: '<p>x</p>   \n\t<p>y</p>\t' })],
  ['Cyrillic bodies (base64)', base({ subject: 'Привет', html: '<p>Привет, как дела? Всё хорошо.</p>', text: 'Привет, как дела? Всё хорошо.' })],
  [
    'a regular attachment',
    base({
      attachments: [{ filename: 'report.pdf', content: Buffer.from('%PDF-1.4 fake'), contentType: 'application/pdf', contentDisposition: 'attachment' }],
    }),
  ],
  [
    'an inline cid image',
    base({
      html: '<p>Logo: <img src="cid:logo@mailroom"></p>',
      attachments: [{ filename: 'logo.png', content: png, contentType: 'image/png', cid: 'logo@mailroom', contentDisposition: 'inline' }],
    }),
  ],
  [
    'a binary attachment, a unicode file name, no content type',
    base({
      attachments: [
        { filename: 'data.bin', content: binary, contentType: 'application/octet-stream' },
        { filename: 'Grüße résumé with a rather long name to need continuation.txt', content: Buffer.from('hello') },
        { filename: 'photo.jpg', content: Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x0d, 0x0a]) },
      ],
    }),
  ],
  [
    'attachments with html only and an inline image beside a regular file',
    base({
      text: undefined,
      html: '<img src="cid:a@b">',
      attachments: [
        { filename: 'a.png', content: png, contentType: 'image/png', cid: 'a@b' },
        { filename: 'b.pdf', content: Buffer.from('pdf'), contentType: 'application/pdf' },
      ],
    }),
  ],
  ['no body at all', base({ html: undefined, text: undefined })],
  ['an attachment and nothing else', base({ html: undefined, text: undefined, attachments: [{ filename: 'only.pdf', content: Buffer.from('pdf') }] })],
];

/** Today's output for the same mail: nodemailer's MailComposer, CRLF, unsigned. */
async function nodemailerMessage(mail: OutgoingMail): Promise<Buffer> {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const info = await transport.sendMail({
    from: mail.from,
    to: mail.to,
    replyTo: mail.replyTo,
    subject: mail.subject,
    html: mail.html,
    text: mail.text,
    headers: mail.headers,
    messageId: mail.messageId,
    attachments: mail.attachments,
  });
  return info.message as Buffer;
}

const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((f) => f.value.map((v) => ({ name: v.name, address: v.address })));
/** A lone CR in a text part: nodemailer sent it as it was, the builder as a line break (RFC 2045 canonical text). */
const lines = (value: string | false | undefined) => (typeof value === 'string' ? value.replace(/\r\n?/g, '\n') : value);

/** A field made of RFC 2047 encoded-words, decoded (the whitespace between them dropped, RFC 2047 6.2); any other value as it is. */
function decodedWords(value: string): string {
  if (!/^(=\?UTF-8\?[QB]\?[^?\s]*\?=\s*)+$/i.test(value)) return value;
  const bytes = [...value.matchAll(/=\?UTF-8\?([QB])\?([^?]*)\?=/gi)].map(([, encoding, text]) =>
    encoding.toUpperCase() === 'B'
      ? Buffer.from(text, 'base64')
      : Buffer.from(
          text.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
          'latin1',
        ),
  );
  return Buffer.concat(bytes).toString('utf8');
}

function comparable(parsed: ParsedMail) {
  return {
    from: addresses(parsed.from),
    to: addresses(parsed.to),
    replyTo: addresses(parsed.replyTo),
    subject: parsed.subject,
    messageId: parsed.messageId,
    html: lines(parsed.html),
    text: lines(parsed.text),
    attachments: parsed.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      contentDisposition: a.contentDisposition,
      cid: a.cid,
      related: a.related,
      content: a.content.toString('base64'),
    })),
  };
}

describe('the message builder', () => {
  let dns: TestDnsServer;
  beforeAll(async () => {
    dns = await startTestDnsServer();
    dns.setTxt(`${SELECTOR}._domainkey.${DOMAIN}`, [dkimRecordValue(publicKey.export({ type: 'spki', format: 'der' }).toString('base64'))]);
  });
  afterAll(() => dns.close());

  /** DKIM results for a raw message, the public key looked up on the test DNS server. */
  async function dkimResults(raw: Buffer) {
    const resolver = createDnsResolver({ servers: [dns.address], timeoutMs: 2000 });
    const result = await dkimVerify(raw, {
      resolver: async (name: string, rrtype: string) => {
        if (rrtype !== 'TXT') throw Object.assign(new Error('unexpected lookup'), { code: 'ENOTFOUND' });
        const txt = await resolver.txt(name);
        if (!txt.length) throw Object.assign(new Error('no record'), { code: 'ENOTFOUND' });
        return txt.map((t) => [t]);
      },
    });
    return result.results as Array<{ signingDomain: string; status: { result: string; comment?: string } }>;
  }

  it.each(cases)('%s: parses as nodemailer’s message does, DKIM verifies, and every line is CRLF and at most 998 octets', async (_name, mail) => {
    const built = buildMessage(mail);
    const ours = await simpleParser(built.raw);
    const theirs = await simpleParser(await nodemailerMessage(mail));
    expect(comparable(ours)).toEqual(comparable(theirs));
    // mailparser reads the List-* fields into objects, and leaves the encoded-words of other fields as they are.
    const fields = Object.keys(mail.headers ?? {});
    const listFields = fields.filter((name) => name.startsWith('List-'));
    const otherFields = fields.filter((name) => !name.startsWith('List-'));
    expect(listFields.map((name) => ours.headers.get(name.toLowerCase()))).toEqual(listFields.map((name) => theirs.headers.get(name.toLowerCase())));
    expect(otherFields.map((name) => decodedWords(ours.headers.get(name.toLowerCase()) as string))).toEqual(otherFields.map((name) => mail.headers![name]));

    expect(await dkimResults(built.raw)).toEqual([expect.objectContaining({ signingDomain: DOMAIN, status: expect.objectContaining({ result: 'pass' }) })]);

    const text = built.raw.toString('latin1');
    expect(text).not.toMatch(/\r(?!\n)|(?<!\r)\n/);
    expect(text).not.toMatch(/[^\x00-\x7f]/);
    for (const line of text.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
    expect(built.envelope).toEqual({ from: `news@${DOMAIN}`, to: addresses(ours.to).map((a) => a.address) });
  });

  it('takes the envelope sender from envelopeFrom (the return path) without writing it into the message', () => {
    const mail = base({});
    const plain = buildMessage(mail);
    const returnPath = `bounces+${crypto.randomUUID()}@mr-bounces.${DOMAIN}`;
    const withReturnPath = buildMessage({ ...mail, envelopeFrom: returnPath }, { stamp: plain.stamp });
    expect(withReturnPath.envelope).toEqual({ from: returnPath, to: plain.envelope.to });
    expect(plain.envelope.from).toBe(`news@${DOMAIN}`);
    // The same bytes: the From field, the signature and the body do not depend on the envelope.
    expect(withReturnPath.raw.equals(plain.raw)).toBe(true);
  });

  it('signs the present fields of the list, List-Unsubscribe-Post included, and the signature breaks when a signed field changes', async () => {
    const built = buildMessage(
      base({ headers: { 'List-Unsubscribe': '<https://mr.example.com/u/x>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } }),
    );
    const text = built.raw.toString();
    const h = /\bh=([^;]+);/.exec(text.replace(/\r\n /g, ' '))![1];
    expect(h).toBe('from:subject:date:message-id:to:mime-version:content-type:list-unsubscribe:list-unsubscribe-post');
    const tampered = Buffer.from(text.replace('List-Unsubscribe-Post: List-Unsubscribe=One-Click', 'List-Unsubscribe-Post: List-Unsubscribe=Two-Click'));
    expect((await dkimResults(tampered))[0].status.result).toBe('fail');
  });

  it('builds the same messages on a worker thread (MAIL_BUILD_THREADS), each its own Buffer, DKIM verifying; a mail that cannot be built fails alone', async () => {
    const pool = createMessageBuilder(1);
    try {
      const mails = cases.map(([, mail]) => mail);
      // Asked for in one turn of the event loop: they travel to the thread as one task.
      const [threaded, unbuildable] = await Promise.all([
        Promise.all(mails.map((mail) => pool.build(mail))),
        pool.build({ ...mails[0], from: '' }).then(
          () => 'built',
          (err: Error) => err.message,
        ),
      ]);
      expect(unbuildable).toMatch(/no From address/);
      for (const [i, message] of threaded.entries()) {
        expect(Buffer.isBuffer(message.raw)).toBe(true);
        expect(comparable(await simpleParser(message.raw))).toEqual(comparable(await simpleParser(buildMessage(mails[i]).raw)));
        expect(message.envelope).toEqual(buildMessage(mails[i]).envelope);
      }
      const signed = threaded.filter((_, i) => mails[i].dkim);
      expect(signed.length).toBeGreaterThan(0);
      for (const message of signed) expect((await dkimResults(message.raw)).map((r) => r.status.result)).toEqual(['pass']);
    } finally {
      await pool.close();
    }
  });

  it.each(cases)('%s: the stamp a build answers makes the same bytes again, with no key (the DKIM-Signature as it was)', async (_name, mail) => {
    const built = buildMessage(mail);
    expect(built.stamp.date).toMatch(/^\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/);
    expect(built.stamp.dkimSignature === null).toBe(!mail.dkim);
    const again = buildMessage({ ...mail, dkim: undefined }, { stamp: JSON.parse(JSON.stringify(built.stamp)) });
    expect(again.raw.equals(built.raw)).toBe(true);
    expect(again.stamp).toEqual(built.stamp);
  });

  it('answers the stamp from a build thread too, and a stamp of unsigned mail adds no signature', async () => {
    const pool = createMessageBuilder(1);
    try {
      const mail = base({ attachments: [{ filename: 'a.bin', content: binary }] });
      const threaded = await pool.build(mail);
      expect(buildMessage({ ...mail, dkim: undefined }, { stamp: threaded.stamp }).raw.equals(threaded.raw)).toBe(true);
      const unsigned = buildMessage({ ...mail, dkim: undefined });
      expect(unsigned.stamp.dkimSignature).toBeNull();
      const rebuilt = buildMessage(mail, { stamp: unsigned.stamp });
      expect(rebuilt.raw.equals(unsigned.raw)).toBe(true);
      expect(rebuilt.raw.toString()).not.toContain('DKIM-Signature');
    } finally {
      await pool.close();
    }
  });

  it('gives every message its own boundaries', () => {
    const mail = base({ attachments: [{ filename: 'a.pdf', content: Buffer.from('x') }] });
    const boundary = (raw: Buffer) => /boundary="([^"]+)"/.exec(raw.toString())![1];
    expect(boundary(buildMessage(mail).raw)).not.toBe(boundary(buildMessage(mail).raw));
  });

  describe('over SMTP', () => {
    let smtp: TestSmtpServer;
    beforeAll(async () => {
      smtp = await startSmtpServer();
    });
    afterAll(() => smtp.close());

    it('hands the built bytes over unchanged through the pooled transport', async () => {
      const transport = createSmtpTransport(smtp.url, createLogger({ level: 'silent', name: 'test' }));
      try {
        const mail = base({
          from: { name: 'Jörg, the "Sender"', address: `news@${DOMAIN}` },
          to: [{ name: 'Reader', address: 'reader@example.org' }],
          text: '.leading dot\n..two dots\nend',
          attachments: [{ filename: 'data.bin', content: binary }],
        });
        const sent = await transport.send(mail);
        expect(sent.messageId).toBe(mail.messageId);
        expect(sent.accepted).toEqual(['reader@example.org']);
        const received = await smtp.waitFor((m) => m.parsed.messageId === mail.messageId);
        expect(received.envelopeTo).toEqual(['reader@example.org']);
        expect(received.parsed.text).toBe('.leading dot\n..two dots\nend');
        expect(received.parsed.attachments[0].content.equals(binary)).toBe(true);
        expect(await dkimResults(Buffer.from(received.raw))).toEqual([expect.objectContaining({ status: expect.objectContaining({ result: 'pass' }) })]);
      } finally {
        await transport.close();
      }
    });
  });
});
