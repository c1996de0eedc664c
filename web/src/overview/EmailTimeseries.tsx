import { lazy, Suspense, useId } from 'react';
import { useQuery } from '@tanstack/react-query';
import { queryKeys } from '../api/queries';
import { unwrap } from '../api/client';
import { useCurrentProject } from '../projects/currentProject';
import { Loading } from '../components/Loading';
import { ErrorNotice } from '../components/ErrorNotice';
import { formatNumber } from '../components/format';
import { formatLongDay, SERIES, type DayPoint } from './emailSeries';
import './overview.css';

/** Recharts comes with the chart's own chunk, fetched when the Overview has points to draw. */
const EmailChart = lazy(() => import('./EmailChart'));

const CAPTION = 'Emails per day, last 30 days';

/**
 * Sends, opens, clicks and bounces of the last 30 days, one point per UTC day
 * (GET /analytics/timeseries): a chart for the eye, and the same numbers as a table for screen
 * readers.
 */
export function EmailTimeseries() {
  const { project, client } = useCurrentProject();
  const captionId = useId();
  const timeseries = useQuery({
    queryKey: [...queryKeys.project(project.id), 'analytics-timeseries', 'day'],
    queryFn: () => unwrap(client.GET('/analytics/timeseries', { params: { query: { granularity: 'day' } } })),
  });

  if (timeseries.isPending) return <Loading label="Loading the daily counts…" />;
  if (timeseries.isError) return <ErrorNotice error={timeseries.error} />;

  const points: DayPoint[] = timeseries.data.points.map(({ bucket, sent, opened, clicked, bounced }) => ({ bucket, sent, opened, clicked, bounced }));
  if (points.every((point) => SERIES.every(({ key }) => point[key] === 0))) {
    return <p className="empty">No email in the last 30 days.</p>;
  }

  return (
    <figure className="overview-chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>{CAPTION}</figcaption>
      <div aria-hidden="true">
        <Suspense fallback={<Loading label="Loading the chart…" />}>
          <EmailChart points={points} />
        </Suspense>
      </div>
      {/* A table cannot shrink to 1 px itself: its box would widen a narrow page. */}
      <div className="visually-hidden">
        <table>
          <caption>{CAPTION} (UTC)</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              {SERIES.map(({ key, label }) => (
                <th key={key} scope="col">
                  {label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {points.map((point) => (
              <tr key={point.bucket}>
                <th scope="row">{formatLongDay(point.bucket)}</th>
                {SERIES.map(({ key }) => (
                  <td key={key}>{formatNumber(point[key])}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
