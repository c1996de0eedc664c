import type { ApiDeps } from '../state';
import { startSmtpListener, type RunningSmtpListener } from './smtpListener';
import { submissionRole } from './submissionSmtp';
import { startInboundSmtp } from './inboundSmtp';
import type { SmtpListenerStatus } from './listenerStatus';

export type { SmtpListenerStatus } from './listenerStatus';

/** Which SMTP roles to start, and where: a port (0 = a free one, for tests), or null for off. */
export interface SmtpListenerPorts {
  inbound: number | null;
  submission: number | null;
}

export interface RunningSmtpListeners {
  inbound: RunningSmtpListener | null;
  submission: RunningSmtpListener | null;
  close(): Promise<void>;
}

/** The ports config asks for: each role whose port is not 0. */
export function configuredSmtpPorts(config: ApiDeps['config']): SmtpListenerPorts {
  return { inbound: config.smtpListeners.inboundPort || null, submission: config.smtpListeners.submissionPort || null };
}

/**
 * Starts every SMTP role the API process runs (contract 20) on the one listener module, and marks
 * each in `status` once it listens. A role that cannot listen stops the start (its port was asked for).
 */
export async function startSmtpListeners(deps: ApiDeps, ports: SmtpListenerPorts, status: SmtpListenerStatus): Promise<RunningSmtpListeners> {
  const settings = deps.config.smtpListeners;
  const started: RunningSmtpListener[] = [];
  try {
    const submission = ports.submission === null ? null : await startSmtpListener('submission', ports.submission, settings, submissionRole(deps), deps.logger);
    if (submission) started.push(submission);
    const inboundListener = ports.inbound === null ? null : await startInboundSmtp(ports.inbound, settings, deps.inbound, deps.logger);
    if (inboundListener) started.push(inboundListener);
    status.submission = submission !== null;
    status.submissionPort = submission?.port ?? null;
    status.inbound = inboundListener !== null;
    return {
      inbound: inboundListener,
      submission,
      async close() {
        status.submission = false;
        status.submissionPort = null;
        status.inbound = false;
        // Sessions in progress get their reply (a stored message its 250) before this resolves.
        await Promise.all(started.map((listener) => listener.close()));
      },
    };
  } catch (err) {
    await Promise.all(started.map((listener) => listener.close()));
    throw err;
  }
}
