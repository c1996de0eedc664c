import crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { EntityManager } from '@mikro-orm/postgresql';
import { openWithSecret, sealWithSecret } from '../../lib/crypto';
import { senderDomainCandidates } from '../../lib/domainName';
import { dateOrNull, queryRows, type TimestampText } from '../sql/rows';
import { textArrayLiteral } from '../sql/textArrayLiteral';

export type DomainStatus = 'PENDING' | 'VERIFIED' | 'FAILED';

export interface DomainRow {
  id: string;
  projectId: string;
  domain: string;
  status: DomainStatus;
  dkimSelector: string;
  /** Base64 DER SubjectPublicKeyInfo: exactly the `p=` value of the DKIM record. */
  dkimPublicKey: string;
  /** The PKCS#8 PEM private key, sealed with SECRET (lib/crypto.ts sealWithSecret). */
  dkimPrivateKeySealed: string;
  dkimVerified: boolean;
  spfVerified: boolean;
  dmarcVerified: boolean;
  lastCheckedAt: Date | null;
  verifiedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What the outgoing-mail code hands nodemailer as its `dkim` option. */
export interface DkimSigningKey {
  domainName: string;
  keySelector: string;
  /** Parsed once: signing with a KeyObject costs 0.25 ms, with the PEM text 0.9 ms (the parse, every time). */
  privateKey: crypto.KeyObject;
}

/** Opened DKIM keys by domain id and sealed value (a new key is a new entry); bounded. */
const openedSigningKeys = new Map<string, crypto.KeyObject>();
const OPENED_SIGNING_KEYS_MAX = 1000;

/** The outcome of one completed DNS check, as services/domains/domainVerification.ts decides it. */
export interface DomainCheckResult {
  status: DomainStatus;
  dkimVerified: boolean;
  spfVerified: boolean;
  dmarcVerified: boolean;
  checkedAt: Date;
}

/** Sealing purpose of DKIM private keys; the row id is the sealing context. */
const DKIM_KEY_PURPOSE = 'dkim-private-key';
export const DKIM_KEY_BITS = 2048;

const generateKeyPair = promisify(crypto.generateKeyPair);

/** A `domains` row as a statement returns it. */
interface DomainTableRow {
  id: string;
  project_id: string;
  domain: string;
  status: DomainStatus;
  dkim_selector: string;
  dkim_public_key: string;
  dkim_private_key_sealed: string;
  dkim_verified: boolean;
  spf_verified: boolean;
  dmarc_verified: boolean;
  last_checked_at: TimestampText | null;
  verified_at: TimestampText | null;
  created_at: TimestampText;
  updated_at: TimestampText;
}

function toDomain(row: DomainTableRow): DomainRow {
  return {
    id: row.id,
    projectId: row.project_id,
    domain: row.domain,
    status: row.status,
    dkimSelector: row.dkim_selector,
    dkimPublicKey: row.dkim_public_key,
    dkimPrivateKeySealed: row.dkim_private_key_sealed,
    dkimVerified: row.dkim_verified,
    spfVerified: row.spf_verified,
    dmarcVerified: row.dmarc_verified,
    lastCheckedAt: dateOrNull(row.last_checked_at),
    verifiedAt: dateOrNull(row.verified_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/**
 * A fresh 2048-bit RSA key. generateKeyPair runs on libuv's thread pool: a 2048-bit key takes
 * tens to hundreds of milliseconds of CPU, which must not stall the API's event loop.
 */
async function generateDkimKey(): Promise<{ publicKey: string; privateKeyPem: string }> {
  const { publicKey, privateKey } = await generateKeyPair('rsa', {
    modulusLength: DKIM_KEY_BITS,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicKey: (publicKey as unknown as Buffer).toString('base64'), privateKeyPem: privateKey };
}

/** `mailroom` plus a random suffix: a new key never reuses the record name of an old one. */
function newSelector(): string {
  return `mailroom${crypto.randomBytes(3).toString('hex')}`;
}

/**
 * The sender-domain rule (contract section 8) as an expression of a select list: the verified
 * domain of the project `projectIdSql` names that is the sender's domain or its closest parent,
 * as one jsonb row (its columns as `select *` names them), null when none is verified. Its
 * parameters: `verifiedSenderDomainParams`. `findVerifiedSenderDomain` asks it alone; the API-key
 * lookup of POST /v1/send asks it beside the key (db/repositories/rateLimitRepository.ts).
 */
export function verifiedSenderDomainSql(projectIdSql: string): string {
  return `(select to_jsonb(d) from domains d
     where d.project_id = ${projectIdSql} and d.status = 'VERIFIED' and d.domain = any(?::text[])
     order by length(d.domain) desc limit 1)`;
}

/** The parameters of `verifiedSenderDomainSql`: the sender's domain and its parents (lib/domainName.ts `senderDomainCandidates`). */
export function verifiedSenderDomainParams(candidates: string[]): unknown[] {
  return [textArrayLiteral(candidates)];
}

/** A domain row `verifiedSenderDomainSql` answered (its timestamps as ISO text), or null. */
export function senderDomainFromJson(row: unknown): DomainRow | null {
  return row ? toDomain(row as DomainTableRow) : null;
}

export const domainRepository = {
  /**
   * Adds a domain with a freshly generated DKIM key, status PENDING. Returns null when the
   * project already has this domain.
   */
  async create(em: EntityManager, input: { projectId: string; domain: string; secret: string }): Promise<DomainRow | null> {
    const taken = await queryRows(em, `select 1 from domains where project_id = ? and domain = ?`, [input.projectId, input.domain]);
    if (taken.length) return null;
    const key = await generateDkimKey();
    const id = crypto.randomUUID();
    const rows = await queryRows<DomainTableRow>(
      em,
      `insert into domains (id, project_id, domain, dkim_selector, dkim_public_key, dkim_private_key_sealed)
       values (?, ?, ?, ?, ?, ?)
       on conflict (project_id, domain) do nothing
       returning *`,
      [id, input.projectId, input.domain, newSelector(), key.publicKey, sealWithSecret(input.secret, DKIM_KEY_PURPOSE, id, key.privateKeyPem)],
    );
    return rows.length ? toDomain(rows[0]) : null;
  },

  async findById(em: EntityManager, projectId: string, id: string): Promise<DomainRow | null> {
    const rows = await queryRows<DomainTableRow>(em, `select * from domains where project_id = ? and id = ?`, [projectId, id]);
    return rows.length ? toDomain(rows[0]) : null;
  },

  async listByProject(em: EntityManager, projectId: string): Promise<DomainRow[]> {
    const rows = await queryRows<DomainTableRow>(em, `select * from domains where project_id = ? order by created_at, id`, [projectId]);
    return rows.map(toDomain);
  },

  async delete(em: EntityManager, projectId: string, id: string): Promise<boolean> {
    const rows = await em.execute(`delete from domains where project_id = ? and id = ? returning id`, [projectId, id]);
    return rows.length > 0;
  },

  /** Stores a completed check. Null when the domain was deleted meanwhile. */
  async recordCheck(em: EntityManager, id: string, result: DomainCheckResult): Promise<DomainRow | null> {
    const rows = await queryRows<DomainTableRow>(
      em,
      `update domains set
         status = ?, dkim_verified = ?, spf_verified = ?, dmarc_verified = ?, last_checked_at = ?,
         -- verifiedAt is when the domain became verified; it goes when verification is lost.
         verified_at = case when ? = 'VERIFIED' then coalesce(verified_at, ?) else null end,
         updated_at = now()
       where id = ?
       returning *`,
      [result.status, result.dkimVerified, result.spfVerified, result.dmarcVerified, result.checkedAt, result.status, result.checkedAt, id],
    );
    return rows.length ? toDomain(rows[0]) : null;
  },

  /**
   * The next page of domains the background check looks at, in id order after `afterId`:
   * PENDING and VERIFIED ones every time, FAILED ones when their last check is over an hour old
   * (so a fixed record is noticed without anyone pressing verify, at a twelfth of the cost).
   */
  async dueForRecheck(em: EntityManager, afterId: string | null, limit: number): Promise<DomainRow[]> {
    const rows = await queryRows<DomainTableRow>(
      em,
      `select * from domains
       where (?::uuid is null or id > ?::uuid)
         and (status in ('PENDING', 'VERIFIED') or last_checked_at is null or last_checked_at < now() - interval '1 hour')
       order by id
       limit ?`,
      [afterId, afterId, limit],
    );
    return rows.map(toDomain);
  },

  /**
   * The sender-domain rule (contract section 8): the verified domain of the project that is
   * `fromAddress`'s domain or its closest parent (`a@mail.example.com` is covered by a verified
   * `example.com`), compared case-insensitively in punycode form. Null when none is verified.
   */
  async findVerifiedSenderDomain(em: EntityManager, projectId: string, fromAddress: string): Promise<DomainRow | null> {
    const candidates = senderDomainCandidates(fromAddress);
    if (!candidates.length) return null;
    const [row] = await queryRows<{ domain: unknown }>(em, `select ${verifiedSenderDomainSql('?::uuid')} as domain`, [
      projectId,
      ...verifiedSenderDomainParams(candidates),
    ]);
    return senderDomainFromJson(row.domain);
  },

  /**
   * The domain whose key signs mail from `fromAddress` at delivery time. The address was checked
   * against verified domains when the mail was accepted; a domain whose record went missing since
   * (a DNS blip) still signs its mail rather than failing it, so any status will do here.
   */
  async findSigningDomain(em: EntityManager, projectId: string, fromAddress: string): Promise<DomainRow | null> {
    const candidates = senderDomainCandidates(fromAddress);
    if (!candidates.length) return null;
    const rows = await queryRows<DomainTableRow>(
      em,
      `select * from domains where project_id = ? and domain = any(?::text[])
       order by (status = 'VERIFIED') desc, length(domain) desc limit 1`,
      [projectId, textArrayLiteral(candidates)],
    );
    return rows.length ? toDomain(rows[0]) : null;
  },

  /**
   * The projects that verified exactly `domain` (lower case): whose mail the inbound listener
   * takes. No parent matching: a verified `example.com` receives for `example.com` only.
   */
  async projectsVerifying(em: EntityManager, domain: string): Promise<string[]> {
    const rows = await em.execute<Array<{ project_id: string }>>(
      `select project_id from domains where domain = ? and status = 'VERIFIED' order by project_id`,
      [domain],
    );
    return rows.map((r) => r.project_id);
  },

  /** The domain's DKIM private key as PEM, opened with SECRET. */
  dkimPrivateKeyPem(secret: string, domain: DomainRow): string {
    return openWithSecret(secret, DKIM_KEY_PURPOSE, domain.id, domain.dkimPrivateKeySealed);
  },

  /**
   * The domain's DKIM key, opened with SECRET and parsed, in the shape of nodemailer's `dkim`
   * option. Kept opened per process (keyed by the sealed value, so a rotated key is opened anew):
   * opening and parsing it for every message cost more than the signature itself.
   */
  dkimSigningKey(secret: string, domain: DomainRow): DkimSigningKey {
    const cacheKey = `${domain.id}\u0000${domain.dkimPrivateKeySealed}\u0000${crypto.createHash('sha256').update(secret).digest('base64')}`;
    let privateKey = openedSigningKeys.get(cacheKey);
    if (!privateKey) {
      privateKey = crypto.createPrivateKey(this.dkimPrivateKeyPem(secret, domain));
      if (openedSigningKeys.size >= OPENED_SIGNING_KEYS_MAX) openedSigningKeys.delete(openedSigningKeys.keys().next().value!);
      openedSigningKeys.set(cacheKey, privateKey);
    }
    return { domainName: domain.domain, keySelector: domain.dkimSelector, privateKey };
  },
};
