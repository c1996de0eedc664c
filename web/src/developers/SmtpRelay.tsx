import type { InstanceConfig } from '../api/queries';
import { CopyButton } from '../components/CopyButton';

/**
 * The SMTP relay's settings (GET /config's `smtpRelaySettings`, contract 20): for software that
 * speaks only SMTP (WordPress, Ghost, Supabase auth). Any user name; the password is a secret key.
 */
export function SmtpRelay({ config }: { config: InstanceConfig | undefined }) {
  if (!config) return null;
  const relay = config.smtpRelaySettings;
  return (
    <section className="card" aria-labelledby="smtp-heading">
      <h2 id="smtp-heading">SMTP relay</h2>
      {relay ? (
        <>
          <p className="muted">For software that sends only by SMTP. Each message is sent as POST /v1/send would send it, one email per recipient.</p>
          <dl className="smtp-settings">
            <div>
              <dt>Host</dt>
              <dd>
                <code>{relay.host}</code> <CopyButton value={relay.host} what="SMTP host" />
              </dd>
            </div>
            <div>
              <dt>Port</dt>
              <dd>
                <code>{relay.port}</code>
              </dd>
            </div>
            <div>
              <dt>Security</dt>
              <dd>{relay.starttls ? 'STARTTLS' : 'None (no TLS certificate)'}</dd>
            </div>
            <div>
              <dt>Username</dt>
              <dd>Any</dd>
            </div>
            <div>
              <dt>Password</dt>
              <dd>A secret key of the project</dd>
            </div>
          </dl>
          <p className="muted">
            {relay.authWithoutTls === 'any'
              ? 'Logging in without TLS is allowed from any address on this instance.'
              : relay.starttls
                ? 'Log in after STARTTLS; without TLS only connections from this machine may log in.'
                : 'Without TLS only connections from this machine may log in (set SMTP_TLS_CERT and SMTP_TLS_KEY to offer STARTTLS).'}{' '}
            The From address must be on one of the project’s verified domains.
          </p>
        </>
      ) : (
        <p className="muted">
          The SMTP relay is off on this instance (its submission port, <code>SUBMISSION_SMTP_PORT</code>, is 0 or not listening). Send with the HTTP API
          instead.
        </p>
      )}
    </section>
  );
}
