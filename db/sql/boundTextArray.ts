/**
 * A text[] built from one bound parameter per element: `array[?, ?, …]::text[]`. For large
 * values (a message's HTML and text) this is the cheap way in: a bound text parameter reaches
 * the server as its bytes, where the same value inside a JSON parameter is escaped by the client
 * and parsed by the server (with a 28 KB newsletter, about 100 µs of PostgreSQL's CPU and 280 µs
 * of the client's per email in a campaign wave's statement; docs/benchmarks.md, `bench:recording`).
 */
export function boundTextArray(values: ReadonlyArray<string | null>): { sql: string; params: Array<string | null> } {
  return { sql: `array[${values.map(() => '?').join(', ')}]::text[]`, params: [...values] };
}
