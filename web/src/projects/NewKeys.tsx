import { CopyButton } from '../components/CopyButton';

/**
 * A project's keys right after they were made: the only time the secret key is shown (the API
 * keeps only a hash and a hint of it). It stays on screen only: nothing writes it to storage.
 */
export function NewKeys({ publicKey, secretKey }: { publicKey: string; secretKey: string }) {
  return (
    <section className="card keys" aria-labelledby="keys-heading">
      <h2 id="keys-heading">API keys</h2>
      <div className="notice notice-warning">
        <p>
          <strong>Copy the secret key now.</strong> It is shown only this once: Mailroom keeps only its last characters. If it is lost, regenerate the keys.
        </p>
      </div>
      <dl className="key-list">
        <div>
          <dt>Public key</dt>
          <dd>
            <code className="key">{publicKey}</code>
            <CopyButton value={publicKey} what="public key" />
          </dd>
          <dd className="key-use">For the browser: tracking events with POST /v1/track.</dd>
        </div>
        <div>
          <dt>Secret key</dt>
          <dd>
            <code className="key">{secretKey}</code>
            <CopyButton value={secretKey} what="secret key" />
          </dd>
          <dd className="key-use">For your servers only: sending email and every other API call.</dd>
        </div>
      </dl>
    </section>
  );
}
