/**
 * Helpers shared by the benches that seed a project's data with server-side SQL
 * (`insert … select … from generate_series`): PostgreSQL makes every row itself, so nothing
 * crosses the connection but the statement, faster than COPY from the client would be.
 */

/** Deterministic pseudo-random column k of row n (the series' variable): a non-negative bigint, as SQL. */
export const pseudoRandom = (k: number) => `(hashint4extended(n, ${k}) & 9223372036854775807)`;

/** The q-quantile (0..1) of ascending samples: the nearest-rank method. */
export function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}
