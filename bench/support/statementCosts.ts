import type { Orm } from '../../db/orm';

/**
 * PostgreSQL's side of a span, statement by statement, from `pg_stat_statements`: how often each
 * normalised statement ran and how long it took to execute, per unit (a mail). Only when the
 * server loads the module (`shared_preload_libraries = 'pg_stat_statements'`; the machine's
 * PostgreSQL does not by default: docs/benchmarks.md, "How the benches run"); otherwise the bench
 * says how to get it and goes on without.
 *
 * Execution time is wall time inside the backend, so on a machine whose cores are all busy it
 * includes waiting for a core; it ranks the statements, it is not a CPU figure.
 */
export interface StatementCosts {
  /** Forgets what was counted so far in this database: the span starts now. */
  reset(): Promise<void>;
  /** The statements that took the most time since reset(), per unit. */
  perUnit(units: number, top?: number): Promise<Record<string, string>>;
}

/** The costs, or why the server cannot tell them (it does not load the module). */
export async function statementCosts(orm: Orm): Promise<StatementCosts | { unavailable: string }> {
  const em = orm.em.fork();
  try {
    await em.execute('create extension if not exists pg_stat_statements');
    await em.execute('select 1 from pg_stat_statements limit 1');
  } catch (err) {
    return { unavailable: (err as Error).message.split('\n')[0] };
  }
  const thisDatabase = `(select oid from pg_database where datname = current_database())`;
  return {
    async reset() {
      await orm.em.fork().execute(`select pg_stat_statements_reset(0, ${thisDatabase}, 0)`);
    },
    async perUnit(units, top = 12) {
      const rows = await orm.em.fork().execute<Array<{ query: string; calls: string; ms: number; rows: string }>>(
        `select query, calls, total_exec_time as ms, rows
           from pg_stat_statements
          where dbid = ${thisDatabase} and query not like '%pg_stat_statements%'
          order by total_exec_time desc`,
      );
      const totalMs = rows.reduce((sum, r) => sum + r.ms, 0);
      const totalCalls = rows.reduce((sum, r) => sum + Number(r.calls), 0);
      const figures: Record<string, string> = {
        'statements per mail (all)': (totalCalls / units).toFixed(2),
        'statement execution µs per mail (all)': ((totalMs * 1000) / units).toFixed(0),
      };
      for (const r of rows.slice(0, top)) {
        const calls = Number(r.calls);
        const text = r.query.replace(/\s+/g, ' ').trim();
        figures[`  ${text.length > 110 ? `${text.slice(0, 107)}...` : text}`] =
          `${(calls / units).toFixed(3)} calls, ${((r.ms * 1000) / units).toFixed(0)} µs a mail (${((r.ms * 1000) / calls).toFixed(0)} µs a call, ${(Number(r.rows) / calls).toFixed(1)} rows)`;
      }
      return figures;
    },
  };
}

/** The line a bench prints when it goes on without the statement figures. */
export function statementCostsSkipped({ unavailable }: { unavailable: string }): string {
  return (
    `(no PostgreSQL time by statement: ${unavailable}. For it, point BENCH_DATABASE_URL at a server started with ` +
    `shared_preload_libraries = 'pg_stat_statements': docs/benchmarks.md, "How the benches run")`
  );
}
