import { useMemo } from 'react';
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { formatNumber } from '../components/format';
import { formatDay, formatLongDay, SERIES, type DayPoint, type Marker } from './emailSeries';

/**
 * The daily lines of sends, opens, clicks and bounces (Recharts). Loaded lazily by
 * EmailTimeseries, so Recharts stays out of every other route's JavaScript. Hidden from screen
 * readers: the table beside it holds the same numbers.
 */
export default function EmailChart({ points }: { points: DayPoint[] }) {
  const colours = useCssColours();
  return (
    <div className="overview-chart-plot">
      <ChartLegend colours={colours} />
      <ResponsiveContainer width="100%" height={280}>
        <LineChart data={points} margin={{ top: 8, right: 12, bottom: 0, left: 0 }} accessibilityLayer={false}>
          <CartesianGrid stroke={colours['--border']} vertical={false} />
          <XAxis
            dataKey="bucket"
            tickFormatter={formatDay}
            minTickGap={24}
            tick={{ fill: colours['--muted'], fontSize: 12 }}
            stroke={colours['--border-strong']}
            tickMargin={6}
          />
          <YAxis
            allowDecimals={false}
            width={44}
            tick={{ fill: colours['--muted'], fontSize: 12 }}
            stroke={colours['--border-strong']}
            tickFormatter={formatNumber}
          />
          <Tooltip
            labelFormatter={(bucket) => (typeof bucket === 'string' ? formatLongDay(bucket) : '')}
            formatter={(value) => formatNumber(Number(value))}
            contentStyle={{ borderColor: colours['--border'], borderRadius: 8, fontSize: 13 }}
            labelStyle={{ color: colours['--text'], fontWeight: 600 }}
          />
          {/* Drawn last, Sent lies on top where lines meet. */}
          {[...SERIES].reverse().map((series) => (
            <Line
              key={series.key}
              type="linear"
              dataKey={series.key}
              name={series.label}
              stroke={colours[series.colour]}
              strokeWidth={2}
              strokeDasharray={series.dash || undefined}
              // Markers on the days with mail only: 31 days of four zeros would be a row of shapes.
              dot={(props: { cx?: number; cy?: number; index?: number; value?: unknown }) =>
                Number(props.value) > 0 ? (
                  <MarkerShape key={`${series.key}-${props.index}`} marker={series.marker} x={props.cx} y={props.cy} colour={colours[series.colour]} />
                ) : (
                  <g key={`${series.key}-${props.index}`} />
                )
              }
              activeDot={(props: { cx?: number; cy?: number }) => (
                <MarkerShape marker={series.marker} x={props.cx} y={props.cy} colour={colours[series.colour]} size={6} />
              )}
              isAnimationActive={false}
            />
          ))}
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

/** The legend: each line's name beside a sample of its dash pattern and marker. */
function ChartLegend({ colours }: { colours: Record<string, string> }) {
  return (
    <ul className="overview-chart-legend">
      {SERIES.map((series) => (
        <li key={series.key}>
          <svg width="36" height="12" viewBox="0 0 36 12" aria-hidden="true" focusable="false">
            <line x1="0" y1="6" x2="36" y2="6" stroke={colours[series.colour]} strokeWidth="2" strokeDasharray={series.dash || undefined} />
            <MarkerShape marker={series.marker} x={18} y={6} colour={colours[series.colour]} />
          </svg>
          {series.label}
        </li>
      ))}
    </ul>
  );
}

/** A point's marker: a different shape per line, white-filled so crossing lines stay readable. */
function MarkerShape({ marker, x, y, colour, size = 4 }: { marker: Marker; x?: number; y?: number; colour: string; size?: number }) {
  if (x === undefined || y === undefined || Number.isNaN(x) || Number.isNaN(y)) return <g />;
  const s = size;
  const common = { fill: '#ffffff', stroke: colour, strokeWidth: 1.75 };
  switch (marker) {
    case 'circle':
      return <circle cx={x} cy={y} r={s - 0.5} {...common} />;
    case 'square':
      return <rect x={x - s + 0.5} y={y - s + 0.5} width={2 * s - 1} height={2 * s - 1} {...common} />;
    case 'triangle':
      return <polygon points={`${x},${y - s - 0.5} ${x + s},${y + s - 1} ${x - s},${y + s - 1}`} {...common} />;
    case 'diamond':
      return <polygon points={`${x},${y - s - 1} ${x + s + 1},${y} ${x},${y + s + 1} ${x - s - 1},${y}`} {...common} />;
  }
}

const VARIABLES = ['--text', '--muted', '--border', '--border-strong', '--accent', '--success', '--danger'] as const;

/** styles.css's colours, read once from the page: SVG attributes take colours, not var(). */
function useCssColours(): Record<string, string> {
  return useMemo(() => {
    const style = getComputedStyle(document.documentElement);
    return Object.fromEntries(VARIABLES.map((name) => [name, style.getPropertyValue(name).trim() || '#1f2328']));
  }, []);
}
