import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { useCurrentProject } from '../projects/currentProject';
import { webhookEndpointsQuery } from './webhooksApi';
import './webhooks.css';

/** The Developers page's way to the Webhooks page, with how many endpoints there are and how many are disabled. */
export function WebhooksCard() {
  const { project, client } = useCurrentProject();
  const endpoints = useQuery(webhookEndpointsQuery(project.id, client));
  const all = endpoints.data?.data ?? [];
  const disabled = all.filter((endpoint) => !endpoint.enabled).length;
  const summary = !endpoints.data
    ? ''
    : all.length === 0
      ? 'No endpoints yet.'
      : `${all.length} endpoint${all.length === 1 ? '' : 's'}${disabled ? `, ${disabled} disabled` : ''}.`;
  return (
    <section className="card wh-dev-card" aria-labelledby="webhooks-heading">
      <div>
        <h2 id="webhooks-heading">Webhooks</h2>
        <p className="muted">
          Your project’s events pushed to your URLs as they happen (deliveries, bounces, opens, clicks, unsubscribes, tracked events), signed and retried until
          your endpoint answers. {summary}
        </p>
      </div>
      <Link className="button" to="webhooks">
        Manage webhooks
      </Link>
    </section>
  );
}
