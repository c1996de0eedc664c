import crypto from 'node:crypto';
import ipaddr from 'ipaddr.js';
import type { SMTPServerAuthentication, SMTPServerSession } from 'smtp-server';
import type { ApiDeps } from '../state';
import type { Project } from '../../db/entities/project';
import { projectRepository } from '../../db/repositories/projectRepository';
import { idempotencyKeyRepository } from '../../db/repositories/idempotencyKeyRepository';
import { emailRepository } from '../../db/emails/emailRepository';
import { LOGIN_THROTTLE, loginThrottleRepository } from '../../db/repositories/loginThrottleRepository';
import { BillingLimitExceeded } from '../../services/billing/usageCaps';
import { isDatabaseUnavailable } from '../../db/databaseAvailability';
import { TemplateRenderError } from '../../mail/rendering/renderEmail';
import { sha256Hex } from '../../lib/crypto';
import { sendTransactional } from '../../services/sending/transactionalSend';
import type { AlsoInTransaction } from '../../services/sending/deliveryScheduler';
import { emailAddress } from '../schemas/commonFields';
import { readSubmittedMessage, type SubmittedMessage } from './submittedMessage';
import { smtpReply, type SmtpRoleHooks } from './smtpListener';
import { newTimeOrderedId } from '../../lib/ids/timeOrderedId';

/** RCPT TO one message may carry (contract 20); each gets its own email. */
export const MAX_SUBMISSION_RECIPIENTS = 50;

/**
 * The login throttle's "account" for AUTH on the relay: the user name is anything, so it cannot
 * key the throttle; every guess from one address counts against this one pair and against the
 * address's login budget, as password guesses at POST /auth/login do.
 */
const THROTTLE_ACCOUNT = 'smtp-submission';

/** A claim on a Message-ID whose submission never finished (its process died) is given up after this. */
const ABANDONED_CLAIM_MS = 10 * 60_000;

/** The largest message accepted (advertised with SIZE): the attachments' limit in base64 plus two full-size parts and headers. */
export function submissionMaxBytes(attachmentsMaxBytes: number): number {
  return Math.ceil(attachmentsMaxBytes * 1.4) + 12 * 1024 * 1024;
}

/** True for an address of this host (127.0.0.0/8, ::1, and those written as IPv4-mapped IPv6). */
export function isLoopbackAddress(address: string): boolean {
  try {
    return ipaddr.process(address).range() === 'loopback';
  } catch {
    return false;
  }
}

/** Contract 20: without TLS, AUTH only from this host or when SUBMISSION_ALLOW_INSECURE_AUTH=true (the password is a secret key). */
export function cleartextAuthAllowed(session: { secure: boolean; remoteAddress: string }, allowInsecureAuth: boolean): boolean {
  return session.secure || allowInsecureAuth || isLoopbackAddress(session.remoteAddress);
}

/** What a successful AUTH keeps on the session (smtp-server's `session.user`). */
interface RelayUser {
  projectId: string;
  /** The secret key, kept in memory for the connection: each message looks it up again (a regenerated key stops working) and counts it for the rate limit. */
  secretKey: string;
}

const userOf = (session: SMTPServerSession): RelayUser | undefined => session.user;

function disabledReply(project: Pick<Project, 'disabled' | 'disabledReason'>) {
  const reason = project.disabledReason === 'PAYMENT_FAILED' ? 'its last payment failed' : 'it was disabled';
  return smtpReply(550, `5.7.1 This project is disabled: ${reason}`);
}

/** The idempotency key of a Message-ID (one per project, shared with the HTTP keys' store). */
function messageKey(messageId: string): string {
  return `smtp:${messageId.length > 200 ? sha256Hex(messageId) : messageId}`;
}

/** What the key's row says about the submission: its recipients and content. */
function submissionFingerprint(recipients: string[], message: SubmittedMessage): string {
  return `SMTP DATA ${crypto
    .createHash('sha256')
    .update(JSON.stringify([[...recipients].sort(), message.contentHash]))
    .digest('hex')}`;
}

/**
 * The submission role (contract 20, "The SMTP relay"): AUTH with a project's secret key, then each
 * message goes through the one send service of POST /v1/send (services/sending/transactionalSend.ts),
 * one email per RCPT TO, answered `250 2.0.0 queued as <ids>` once every email is committed (its
 * delivery starts afterwards, also when Temporal is away at the time: contract 9). The Message-ID
 * makes a resubmission idempotent.
 */
export function submissionRole(deps: ApiDeps): SmtpRoleHooks {
  const { config, logger, orm } = deps;
  const log = logger.child({ smtp: 'submission' });
  const maxBytes = submissionMaxBytes(config.attachmentsMaxBytes);
  const allowInsecure = config.smtpListeners.submissionAllowInsecureAuth;

  async function authenticate(auth: SMTPServerAuthentication, session: SMTPServerSession): Promise<RelayUser> {
    if (!cleartextAuthAllowed(session, allowInsecure)) {
      throw smtpReply(538, '5.7.11 Encryption required: use STARTTLS before AUTH (or set SUBMISSION_ALLOW_INSECURE_AUTH=true)');
    }
    const em = orm.em.fork();
    const address = ipaddr.isValid(session.remoteAddress) ? ipaddr.process(session.remoteAddress).toString() : session.remoteAddress;
    // Charged before the key is checked, so concurrent guesses cannot slip past the limit.
    const admission = await loginThrottleRepository.admit(em, THROTTLE_ACCOUNT, address, LOGIN_THROTTLE);
    if (!admission.admitted) {
      throw smtpReply(454, `4.7.0 Too many failed authentication attempts; try again in ${admission.retryAfterSeconds} seconds`);
    }
    const key = auth.password ?? '';
    const project = key.startsWith('sk_') && key.length <= 200 ? await projectRepository.findBySecretKey(em, key) : null;
    if (!project) {
      const publicKey = key.startsWith('pk_');
      log.info({ remoteAddress: address, publicKey }, 'smtp submission: authentication failed');
      throw smtpReply(
        535,
        publicKey ? '5.7.8 A public key cannot send: use the project secret key (sk_…) as the password' : '5.7.8 Authentication credentials invalid',
      );
    }
    await loginThrottleRepository.succeeded(em, THROTTLE_ACCOUNT, address);
    return { projectId: project.id, secretKey: key };
  }

  /** The project as the key names it now, counted for the rate limit like an API request. */
  async function currentProject(user: RelayUser): Promise<Project> {
    let project: Project | null;
    if (config.rateLimitPerMinute > 0) {
      const found = await deps.apiKeys.resolve('secret_key_hash', sha256Hex(user.secretKey), config.rateLimitPerMinute);
      if (found && !found.hit.accepted) {
        throw smtpReply(
          421,
          `4.7.0 Rate limit of ${config.rateLimitPerMinute} requests per minute exceeded; try again in ${found.hit.retryAfterSeconds} seconds`,
        );
      }
      project = found?.project ?? null;
    } else {
      project = await projectRepository.findBySecretKey(orm.em.fork(), user.secretKey);
    }
    if (!project || project.id !== user.projectId) throw smtpReply(535, '5.7.8 The secret key this session authenticated with is no longer valid');
    if (project.disabled) throw disabledReply(project);
    return project;
  }

  /** The verified domain the From address sends from (contract 8's sender-domain rule), else the 550 naming it. */
  async function senderDomain(projectId: string, message: SubmittedMessage): Promise<string> {
    const domain = await deps.senderDomains.findVerified(projectId, message.from.address);
    if (domain) return domain.domain;
    const fromDomain = message.from.address.slice(message.from.address.lastIndexOf('@') + 1);
    throw smtpReply(
      550,
      `5.7.1 The domain ${fromDomain} is not verified for this project: add it with POST /domains and verify it before sending from ${message.from.address}`,
    );
  }

  async function send(
    project: Project,
    domain: string,
    recipients: string[],
    message: SubmittedMessage,
    recorded?: { emailIds: string[]; alsoInTransaction: AlsoInTransaction },
  ): Promise<string[]> {
    const sent = await sendTransactional(deps, orm.em.fork(), {
      projectId: project.id,
      content: { kind: 'message', subject: message.subject, html: message.html, text: message.text, type: 'TRANSACTIONAL' },
      templateId: null,
      sender: { fromAddress: message.from.address, fromName: message.from.name, replyTo: message.replyTo, domain },
      recipients: recipients.map((email) => ({ email, name: message.namesByAddress.get(email) ?? null })),
      headers: message.headers,
      attachments: message.attachments,
      emailIds: recorded?.emailIds,
      alsoInTransaction: recorded?.alsoInTransaction,
    });
    return sent.map((s) => s.emailId);
  }

  /** Sends once per Message-ID (within IDEMPOTENCY_KEY_TTL_HOURS): a repeat is answered the same ids. */
  async function sendOnce(project: Project, domain: string, recipients: string[], message: SubmittedMessage): Promise<string[]> {
    if (!message.messageId) return send(project, domain, recipients, message);
    const em = orm.em.fork();
    const key = messageKey(message.messageId);
    const fingerprint = submissionFingerprint(recipients, message);
    const ttl = config.idempotencyKeyTtlHours;
    // The ids are chosen before the claim and kept with it: a claim whose process died after
    // recording the emails is then finished with them rather than sent again.
    const ids = recipients.map(() => newTimeOrderedId());
    let claimed = await idempotencyKeyRepository.claim(em, project.id, key, fingerprint, ttl, ids);
    if (!claimed) {
      const existing = await idempotencyKeyRepository.find(em, project.id, key);
      if (existing && existing.request !== fingerprint) {
        throw smtpReply(
          550,
          `5.7.0 Message-ID <${message.messageId}> was already used for another message (other recipients or content); give a new message a new Message-ID`,
        );
      }
      const answered = existing && Array.isArray(existing.response) ? (existing.response as string[]) : null;
      if (existing?.statusCode !== null && answered) return answered;
      if (existing && Date.now() - existing.createdAt.getTime() > ABANDONED_CLAIM_MS) {
        // The emails of one send are recorded by one INSERT: the first tells about all of them.
        if (answered?.length && (await emailRepository.findById(em, project.id, answered[0]))) {
          await idempotencyKeyRepository.complete(em, project.id, key, 250, answered);
          return answered;
        }
        await idempotencyKeyRepository.release(em, project.id, key);
        claimed = await idempotencyKeyRepository.claim(em, project.id, key, fingerprint, ttl, ids);
      }
      if (!claimed) throw smtpReply(451, `4.3.0 The message <${message.messageId}> is being sent by another submission; try again shortly`);
    }
    try {
      // The key's 250 and ids commit with the emails: a process killed after the commit leaves it settled.
      await send(project, domain, recipients, message, {
        emailIds: ids,
        alsoInTransaction: (tx) => idempotencyKeyRepository.complete(tx, project.id, key, 250, ids),
      });
    } catch (err) {
      // Nothing was recorded (the send service records all or nothing): the Message-ID may be used again.
      await idempotencyKeyRepository.release(em, project.id, key).catch((releaseErr: unknown) => {
        log.warn({ err: releaseErr, messageId: message.messageId }, 'smtp submission: could not release the Message-ID after a failed send');
      });
      throw err;
    }
    return ids;
  }

  /** The reply for what went wrong while sending (a refusal built with smtpReply passes as it is). */
  function replyFor(err: unknown): Error {
    if ((err as { responseCode?: number }).responseCode) return err as Error;
    if (err instanceof BillingLimitExceeded) return smtpReply(550, `5.7.1 ${err.message}`);
    if (err instanceof TemplateRenderError)
      return smtpReply(554, `5.6.0 The message cannot be sent: ${err.problems.map((p) => p.message).join('; ')}`.slice(0, 500));
    if (isDatabaseUnavailable(err)) {
      log.warn({ err }, 'smtp submission: the database is away');
      return smtpReply(451, '4.3.0 The message could not be queued for delivery; nothing was sent. Try again shortly');
    }
    log.error({ err }, 'smtp submission: the message could not be sent');
    return smtpReply(451, '4.3.0 Local error while queueing the message; nothing was sent. Try again shortly');
  }

  async function accept(raw: Buffer, session: SMTPServerSession): Promise<string> {
    const user = userOf(session);
    if (!user) throw smtpReply(530, '5.7.0 Authentication required');
    const read = await readSubmittedMessage(raw, { attachmentsMaxBytes: config.attachmentsMaxBytes });
    if ('refusal' in read) throw smtpReply(read.refusal.code, read.refusal.message);
    const recipients = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
    try {
      // Independent lookups, side by side: each message's reply waits for the slower only.
      // The key's verdict (rate limit, disabled project) comes before the domain's, whichever settles first.
      const [project, domain] = await Promise.allSettled([currentProject(user), senderDomain(user.projectId, read.message)]).then(([p, d]) => {
        if (p.status === 'rejected') throw p.reason;
        if (d.status === 'rejected') throw d.reason;
        return [p.value, d.value] as const;
      });
      const ids = await sendOnce(project, domain, recipients, read.message);
      log.info({ projectId: project.id, emails: ids.length, messageId: read.message.messageId }, 'smtp submission: message queued');
      return `2.0.0 queued as ${ids.join(',')}`;
    } catch (err) {
      throw replyFor(err);
    }
  }

  return {
    options: {
      authMethods: ['PLAIN', 'LOGIN'],
      // AUTH is offered without TLS and refused in onAuth unless the rule allows it (a clear 538).
      allowInsecureAuth: true,
      // MAIL is refused in onMailFrom with the contract's 530 5.7.0.
      authOptional: true,
    },
    maxBytes,
    onAuth(auth, session, callback) {
      if (auth.method !== 'PLAIN' && auth.method !== 'LOGIN') return callback(smtpReply(504, '5.5.4 Use AUTH PLAIN or AUTH LOGIN'));
      authenticate(auth, session).then(
        (user) => callback(null, { user }),
        (err: unknown) => {
          if ((err as { responseCode?: number }).responseCode) return callback(err as Error);
          log.warn({ err }, 'smtp submission: authentication could not be checked');
          callback(smtpReply(454, '4.7.0 Temporary authentication failure; try again shortly'));
        },
      );
    },
    onMailFrom(_address, session, callback) {
      const user = userOf(session);
      if (!user) return callback(smtpReply(530, '5.7.0 Authentication required: AUTH PLAIN or LOGIN with the project secret key as the password'));
      callback();
    },
    onRcptTo(address, session, callback) {
      const parsed = emailAddress.safeParse(address.address);
      if (!parsed.success) return callback(smtpReply(553, `5.1.3 Invalid recipient address: ${address.address}`.slice(0, 300)));
      const known = session.envelope.rcptTo.some((r) => r.address.toLowerCase() === parsed.data);
      if (!known && session.envelope.rcptTo.length >= MAX_SUBMISSION_RECIPIENTS) {
        return callback(smtpReply(452, `4.5.3 Too many recipients: at most ${MAX_SUBMISSION_RECIPIENTS} per message; send the rest in another message`));
      }
      callback();
    },
    onMessage: accept,
  };
}
