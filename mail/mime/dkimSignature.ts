import crypto, { type KeyObject } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { CRLF, foldField } from './headerFields';

/**
 * DKIM (RFC 6376), rsa-sha256 with relaxed/relaxed canonicalisation, over a message the builder
 * has in hand as text: its header fields one by one and its body, every line ending in CRLF.
 */

/**
 * The fields signed unless the caller names others: nodemailer's default list (RFC 6376 5.4.1)
 * plus List-Unsubscribe-Post: RFC 8058 section 4 requires one-click mail to carry both
 * List-Unsubscribe headers under a valid DKIM signature, and mailbox providers ignore the
 * one-click header otherwise.
 */
export const SIGNED_HEADER_FIELDS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:Content-ID:' +
  'Content-Description:Resent-Date:Resent-From:Resent-Sender:Resent-To:Resent-Cc:Resent-Message-ID:In-Reply-To:References:' +
  'List-Id:List-Help:List-Unsubscribe:List-Unsubscribe-Post:List-Subscribe:List-Post:List-Owner:List-Archive';

export interface DkimKey {
  domainName: string;
  keySelector: string;
  privateKey: string | KeyObject;
  /** Colon-separated field names to sign, in the order of `h=`; only the present ones are listed. */
  headerFieldNames?: string;
}

/** A header field as the message carries it: its name and the whole (folded) line, `Name: value`. */
export interface HeaderField {
  name: string;
  line: string;
}

const WSP_NEEDING_WORK = /[ \t]\r\n|[ \t]$|\t| {2}/;

/**
 * The relaxed body (RFC 6376 3.4.4): whitespace at line ends dropped, runs of whitespace as one
 * space, empty lines at the end dropped, and a CRLF after the last line. Lines end in CRLF
 * (the builder writes no other line end).
 */
export function relaxedBody(body: string): string {
  const canonical = WSP_NEEDING_WORK.test(body) ? body.replace(/[ \t]+(?=\r\n|$)/g, '').replace(/[ \t]+/g, ' ') : body;
  let end = canonical.length;
  while (end >= 2 && canonical.charCodeAt(end - 1) === 0x0a && canonical.charCodeAt(end - 2) === 0x0d) end -= 2;
  return end ? canonical.slice(0, end) + CRLF : '';
}

/** A field's value, relaxed (RFC 6376 3.4.2): unfolded, whitespace runs as one space, none at the ends. */
export function relaxedHeaderValue(line: string): string {
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .replace(/^ | $/g, '');
}

const cleanTag = (value: string) => value.replace(/[\x00-\x20\x7f;=]/g, '');

/**
 * The DKIM-Signature field for these header fields and body. Of each field named in the list,
 * the last instance is signed (nodemailer's choice, and the one RFC 6376 5.4.2 describes for a
 * single instance); `h=` names the present ones, lower case, in the list's order.
 */
export function dkimSignatureField(fields: HeaderField[], body: string, key: DkimKey): string {
  const bodyHash = crypto.createHash('sha256').update(relaxedBody(body), 'utf8').digest('base64');
  const byName = new Map<string, string>();
  for (const field of fields) byName.set(field.name.toLowerCase(), field.line);
  const signed: string[] = [];
  let canonical = '';
  const wanted = new Set((key.headerFieldNames ?? SIGNED_HEADER_FIELDS).toLowerCase().split(':'));
  for (const raw of wanted) {
    const name = raw.trim();
    const line = byName.get(name);
    if (line === undefined) continue;
    signed.push(name);
    canonical += `${name}:${relaxedHeaderValue(line)}${CRLF}`;
  }
  const domain = domainToASCII(cleanTag(key.domainName)) || cleanTag(key.domainName);
  const tags = `v=1; a=rsa-sha256; c=relaxed/relaxed; d=${domain}; q=dns/txt; s=${cleanTag(key.keySelector)}; bh=${bodyHash}; h=${signed.join(':')}`;
  // The signature covers this field too, with b= empty and without a final CRLF (RFC 6376 3.7).
  canonical += `dkim-signature:${tags}; b=`;
  const signature = crypto.sign('sha256', Buffer.from(canonical, 'utf8'), key.privateKey).toString('base64');
  let folded = '';
  for (let at = 0; at < signature.length; at += 72) folded += (at ? CRLF + ' ' : '') + signature.slice(at, at + 72);
  return `${foldField('DKIM-Signature', tags + ';')}${CRLF} b=${folded}`;
}
