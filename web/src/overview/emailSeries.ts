/**
 * The four daily counts the Overview's chart draws, and how each line is told apart without
 * colour: its name (the legend), its dash pattern and its marker. Shared by the chart (lazy, with
 * Recharts) and the table beside it (in the page's own chunk), so neither loads the other.
 */

export type SeriesKey = 'sent' | 'opened' | 'clicked' | 'bounced';
export type Marker = 'circle' | 'square' | 'triangle' | 'diamond';

export interface Series {
  key: SeriesKey;
  label: string;
  /** A CSS variable of styles.css. */
  colour: string;
  /** SVG stroke-dasharray; '' for a solid line. */
  dash: string;
  marker: Marker;
}

export const SERIES: readonly Series[] = [
  { key: 'sent', label: 'Sent', colour: '--text', dash: '', marker: 'circle' },
  { key: 'opened', label: 'Opened', colour: '--accent', dash: '8 4', marker: 'square' },
  { key: 'clicked', label: 'Clicked', colour: '--success', dash: '2 4', marker: 'triangle' },
  { key: 'bounced', label: 'Bounced', colour: '--danger', dash: '10 4 2 4', marker: 'diamond' },
];

/** One day (UTC) of GET /analytics/timeseries, with the counts the chart shows. */
export type DayPoint = { bucket: string } & Record<SeriesKey, number>;

const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
const longDayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

/** "27 Nov": a bucket (midnight UTC) as an axis label. */
export function formatDay(bucket: string): string {
  return dayFormat.format(new Date(bucket));
}

/** "27 Nov 2026": a bucket as the table's row header. */
export function formatLongDay(bucket: string): string {
  return longDayFormat.format(new Date(bucket));
}
