/** The email metrics of contract section 15, as the rollups count them (see the AnalyticsRollups migration). */
export const EMAIL_METRICS = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained', 'unsubscribed'] as const;
export type EmailMetric = (typeof EMAIL_METRICS)[number];
export type EmailMetrics = Record<EmailMetric, number>;

export interface EmailRates {
  deliveryRate: number;
  openRate: number;
  clickRate: number;
  clickToOpenRate: number;
  bounceRate: number;
  complaintRate: number;
  unsubscribeRate: number;
}

/** Percent of `of`, two decimals; 0 when `of` is 0. */
export function percent(part: number, of: number): number {
  return of > 0 ? Math.round((part / of) * 10000) / 100 : 0;
}

/** Rates in percent of `sent` (click-to-open: of `opened`). */
export function emailRates(m: EmailMetrics): EmailRates {
  return {
    deliveryRate: percent(m.delivered, m.sent),
    openRate: percent(m.opened, m.sent),
    clickRate: percent(m.clicked, m.sent),
    clickToOpenRate: percent(m.clicked, m.opened),
    bounceRate: percent(m.bounced, m.sent),
    complaintRate: percent(m.complained, m.sent),
    unsubscribeRate: percent(m.unsubscribed, m.sent),
  };
}

/** `sum(sent)::bigint as sent, …` over a rollup alias; bigint sums come back from pg as strings. */
export const sumMetricsSql = (alias: string) => EMAIL_METRICS.map((m) => `coalesce(sum(${alias}.${m}), 0)::bigint as ${m}`).join(', ');

export function readMetrics(row: Record<string, unknown> | undefined): EmailMetrics {
  return Object.fromEntries(EMAIL_METRICS.map((m) => [m, Number(row?.[m] ?? 0)])) as EmailMetrics;
}

/** Custom events: names the service does not emit (contract section 15, top-events). */
export const CUSTOM_EVENT_NAME_SQL = (column: string) => `${column} not like 'email.%' and ${column} not like 'contact.%' and ${column} not like 'segment.%'`;
