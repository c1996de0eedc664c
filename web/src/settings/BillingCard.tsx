import { useId } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { z } from 'zod';
import { sessionClient, unwrap } from '../api/client';
import { configQuery, setupStateQuery } from '../api/queries';
import { useCurrentProject } from '../projects/currentProject';
import { ErrorNotice } from '../components/ErrorNotice';
import { Loading } from '../components/Loading';

/** What `?billing=` says when Stripe sends the browser back to this page (the URLs the card gives the API). */
const RETURN_NOTES: Record<string, string> = {
  success: 'Checkout complete. The subscription shows as active here once Stripe confirms it, usually within seconds.',
  cancelled: 'Checkout cancelled: nothing was charged and the project is unchanged.',
  portal: 'Back from the billing portal. Changes show here once Stripe confirms them.',
};

/** This page's own address with `?billing=<state>`: where Stripe sends the browser back. */
function returnUrl(state: string): string {
  const url = new URL(window.location.href);
  url.search = '';
  url.hash = '';
  url.searchParams.set('billing', state);
  return url.toString();
}

/** What checkout and the billing portal answer: the Stripe page to send the browser to. */
const stripeRedirect = z.object({ url: z.string().url() });

type StripeRedirectCall = (
  path: string,
  init: { params: { path: { id: string } }; body: Record<string, string> },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

/**
 * POST …/checkout or …/billing-portal through the session client. These routes exist only with
 * STRIPE_SECRET_KEY set, so the committed API description (generated with the defaults: billing
 * off) and its typed paths lack them; the answer is checked here instead.
 */
async function openStripePage(
  path: '/users/@me/projects/{id}/checkout' | '/users/@me/projects/{id}/billing-portal',
  projectId: string,
  body: Record<string, string>,
) {
  const post = sessionClient.POST.bind(sessionClient) as unknown as StripeRedirectCall;
  const { url } = stripeRedirect.parse(await unwrap(post(path, { params: { path: { id: projectId } }, body })));
  window.location.assign(url);
}

/**
 * Contract 17 with Stripe billing on: the project's subscription as the API reports it (the setup
 * state's `subscriptionActive`, a project disabled for a failed payment), "Upgrade" through
 * POST …/checkout and "Manage billing" through POST …/billing-portal, both for owners and admins,
 * each sending the browser to the Stripe page the API answers. Nothing when billing is off.
 */
export function BillingCard({ manages }: { manages: boolean }) {
  const config = useQuery(configQuery);
  if (!config.data?.billing) return null;
  return <Billing manages={manages} />;
}

function Billing({ manages }: { manages: boolean }) {
  const { project } = useCurrentProject();
  const headingId = useId();
  const [searchParams, setSearchParams] = useSearchParams();
  const returned = searchParams.get('billing');
  const setup = useQuery({
    ...setupStateQuery(project.id),
    // Back from a checkout: Stripe's webhook may land a moment after the browser does.
    refetchInterval: (query) => (returned === 'success' && query.state.data?.steps.subscriptionActive === false ? 3_000 : false),
  });
  const checkout = useMutation({
    mutationFn: () => openStripePage('/users/@me/projects/{id}/checkout', project.id, { successUrl: returnUrl('success'), cancelUrl: returnUrl('cancelled') }),
  });
  const portal = useMutation({
    mutationFn: () => openStripePage('/users/@me/projects/{id}/billing-portal', project.id, { returnUrl: returnUrl('portal') }),
  });
  // Pending until the browser has left for Stripe, so the button stays busy meanwhile.
  const leaving = checkout.isPending || checkout.isSuccess || portal.isPending || portal.isSuccess;

  const active = setup.data?.steps.subscriptionActive === true;
  const paymentFailed = project.disabledReason === 'PAYMENT_FAILED';
  const returnNote = returned === 'success' && active ? 'Checkout complete: the subscription is active.' : returned ? RETURN_NOTES[returned] : undefined;

  function dismissNote() {
    const next = new URLSearchParams(searchParams);
    next.delete('billing');
    setSearchParams(next, { replace: true });
  }

  return (
    <section className="card billing-card" aria-labelledby={headingId}>
      <div className="card-header">
        <h2 id={headingId}>Billing</h2>
        <p className="muted">Paid through Stripe: this month’s usage is billed to the project’s subscription.</p>
      </div>
      {returnNote ? (
        <div className="notice billing-return" role="status">
          <p>{returnNote}</p>
          <button type="button" className="button button-quiet button-small" onClick={dismissNote}>
            Dismiss
          </button>
        </div>
      ) : null}
      {setup.isPending ? (
        <Loading />
      ) : setup.isError ? (
        <ErrorNotice error={setup.error} />
      ) : (
        <>
          <dl className="billing-state">
            <div>
              <dt>Subscription</dt>
              <dd>{active ? <span className="badge badge-success">Active</span> : <span className="badge">Not subscribed</span>}</dd>
            </div>
            <div>
              <dt>Plan</dt>
              <dd>{active ? 'Subscribed: billed monthly for the emails sent' : 'No plan: start a subscription to be billed for usage'}</dd>
            </div>
          </dl>
          {paymentFailed ? (
            <div className="notice notice-error" role="alert">
              <p className="notice-title">A payment failed</p>
              <p>The project is disabled: its sends are refused until the payment method is fixed in the billing portal.</p>
            </div>
          ) : null}
          {manages ? (
            <div className="form-actions billing-actions">
              {!active ? (
                <button
                  type="button"
                  className="button button-primary"
                  disabled={leaving}
                  aria-busy={checkout.isPending || checkout.isSuccess || undefined}
                  onClick={() => checkout.mutate()}
                >
                  Upgrade
                </button>
              ) : null}
              {active || paymentFailed ? (
                <button
                  type="button"
                  className={active ? 'button button-primary' : 'button'}
                  disabled={leaving}
                  aria-busy={portal.isPending || portal.isSuccess || undefined}
                  onClick={() => portal.mutate()}
                >
                  Manage billing
                </button>
              ) : null}
              <span className="muted">
                {active ? 'Change the payment method, see invoices or cancel in Stripe’s portal.' : 'You continue on Stripe’s checkout page.'}
              </span>
            </div>
          ) : (
            <p className="muted">Only the project’s owners and admins can manage billing.</p>
          )}
          {checkout.error ? <ErrorNotice error={checkout.error} title="The checkout could not start" /> : null}
          {portal.error ? <ErrorNotice error={portal.error} title="The billing portal could not open" /> : null}
        </>
      )}
    </section>
  );
}
