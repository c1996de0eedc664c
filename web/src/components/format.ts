const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const number = new Intl.NumberFormat();

/** A moment as the user's locale writes it ("27 Nov 2026, 17:40"). */
export function formatDateTime(value: string | Date): string {
  return dateTime.format(typeof value === 'string' ? new Date(value) : value);
}

export function formatNumber(value: number): string {
  return number.format(value);
}

/** A percentage the API computed (two decimals), as "12.5%". */
export function formatPercent(value: number): string {
  return `${number.format(Math.round(value * 10) / 10)}%`;
}
