import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { queryKeys, setupStateQuery } from '../api/queries';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { Loading } from '../components/Loading';
import { ErrorNotice } from '../components/ErrorNotice';
import { formatNumber, formatPercent } from '../components/format';
import { SetupChecklist } from './SetupChecklist';
import { EmailTimeseries } from './EmailTimeseries';
import { ActivityTable } from '../activity/ActivityTable';
import { PageTitle } from '../components/PageTitle';

/** The project's home: what is left to set up, the last 30 days in numbers and as a daily chart, and what happened last. */
export function OverviewPage() {
  const { project, client } = useCurrentProject();
  const setup = useQuery(setupStateQuery(project.id));
  const stats = useQuery({
    queryKey: [...queryKeys.project(project.id), 'activity-stats'],
    queryFn: () => unwrap(client.GET('/activity/stats')),
  });
  const activity = useQuery({
    queryKey: [...queryKeys.project(project.id), 'activity', 'recent'],
    queryFn: () => unwrap(client.GET('/activity', { params: { query: { limit: '10' } } })),
    refetchInterval: 15_000,
  });

  return (
    <div className="page">
      <PageTitle parts={['Overview', project.name]} />
      <header className="page-header">
        <h1>Overview</h1>
        <p className="muted">{project.name}</p>
      </header>

      {setup.isPending ? (
        <Loading label="Loading the setup checklist…" />
      ) : setup.isError ? (
        <ErrorNotice error={setup.error} />
      ) : (
        <SetupChecklist state={setup.data} />
      )}

      <section className="card" aria-labelledby="stats-heading">
        <h2 id="stats-heading">Last 30 days</h2>
        {stats.isPending ? (
          <Loading />
        ) : stats.isError ? (
          <ErrorNotice error={stats.error} />
        ) : (
          <dl className="stats">
            <div>
              <dt>Emails sent</dt>
              <dd>{formatNumber(stats.data.totalEmailsSent)}</dd>
            </div>
            <div>
              <dt>Opened</dt>
              <dd>
                {formatNumber(stats.data.totalEmailsOpened)}
                <span className="stat-rate">{formatPercent(stats.data.openRate)} of sent</span>
              </dd>
            </div>
            <div>
              <dt>Clicked</dt>
              <dd>
                {formatNumber(stats.data.totalEmailsClicked)}
                <span className="stat-rate">{formatPercent(stats.data.clickRate)} of sent</span>
              </dd>
            </div>
            <div>
              <dt>Events tracked</dt>
              <dd>{formatNumber(stats.data.totalEvents)}</dd>
            </div>
            <div>
              <dt>Workflows started</dt>
              <dd>{formatNumber(stats.data.totalWorkflowsStarted)}</dd>
            </div>
          </dl>
        )}
        <EmailTimeseries />
      </section>

      <section className="card" aria-labelledby="activity-heading">
        <div className="card-header">
          <h2 id="activity-heading">Recent activity</h2>
          <Link to={`/projects/${project.id}/activity`}>All activity</Link>
        </div>
        {activity.isPending ? (
          <Loading />
        ) : activity.isError ? (
          <ErrorNotice error={activity.error} />
        ) : (
          <ActivityTable
            items={activity.data.data}
            labelledBy="activity-heading"
            empty="Nothing has happened in this project yet. Send an email or track an event, and it shows here."
          />
        )}
      </section>
    </div>
  );
}
