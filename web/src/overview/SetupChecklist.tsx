import { useMutation } from '@tanstack/react-query';
import { sessionClient, unwrap } from '../api/client';
import type { SetupState } from '../api/queries';
import { ErrorNotice } from '../components/ErrorNotice';

type Step = keyof SetupState['steps'];

/** The onboarding steps of GET /projects/:id/setup-state, in the order a new project takes them. */
const STEPS: { step: Step; label: string; help: string }[] = [
  { step: 'projectCreated', label: 'Create a project', help: 'Its contacts, templates and keys are its own.' },
  { step: 'emailVerified', label: 'Verify your email address', help: 'Follow the link Mailroom sent when you signed up.' },
  { step: 'domainVerified', label: 'Verify a sending domain', help: 'Add its DNS records, so mail from it is signed and trusted.' },
  { step: 'templateCreated', label: 'Create a template', help: 'The HTML your emails and campaigns are made from.' },
  { step: 'firstEmailSent', label: 'Send your first email', help: 'POST /v1/send with the secret key, or a campaign.' },
  { step: 'teamInvited', label: 'Invite a teammate', help: 'Projects can have several members, each with a role.' },
  { step: 'subscriptionActive', label: 'Start a subscription', help: 'Billing is on for this instance.' },
];

export function SetupChecklist({ state }: { state: SetupState }) {
  const steps = STEPS.filter(({ step }) => state.steps[step] !== undefined);
  return (
    <section className="card" aria-labelledby="setup-heading">
      <div className="card-header">
        <h2 id="setup-heading">{state.complete ? 'Setup complete' : 'Get set up'}</h2>
        <p className="muted">
          {state.completed} of {state.total} done
        </p>
      </div>
      <progress className="setup-progress" value={state.completed} max={state.total} aria-label="Setup progress" />
      <ol className="checklist">
        {steps.map(({ step, label, help }) => {
          const done = state.steps[step] === true;
          return (
            <li key={step} className={done ? 'checklist-item done' : 'checklist-item'}>
              <span className="checklist-mark" aria-hidden="true">
                {done ? '✓' : ''}
              </span>
              <div>
                <p className="checklist-label">{label}</p>
                <p className="muted">{help}</p>
                {step === 'emailVerified' && !done ? <ResendVerification /> : null}
              </div>
              <span className={done ? 'badge badge-success' : 'badge'}>{done ? 'Done' : 'To do'}</span>
            </li>
          );
        })}
      </ol>
    </section>
  );
}

/** POST /auth/request-verification: the verification link again, for a mail that never came or expired. */
function ResendVerification() {
  const resend = useMutation({ mutationFn: () => unwrap(sessionClient.POST('/auth/request-verification')) });
  return (
    <div className="checklist-action">
      <button type="button" className="button button-small" onClick={() => resend.mutate()} disabled={resend.isPending || resend.isSuccess}>
        Send the link again
      </button>
      <span role="status" className="muted">
        {resend.isSuccess ? (resend.data.alreadyVerified ? 'Your address is already verified.' : 'Sent: check your inbox.') : ''}
      </span>
      {resend.error ? <ErrorNotice error={resend.error} /> : null}
    </div>
  );
}
