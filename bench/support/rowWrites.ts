import type { Orm } from '../../db/orm';

/**
 * Rows and index entries a span wrote, by table, from PostgreSQL's statistics: inserted and
 * updated rows, and the index entries they added. An insert adds one entry to each full index of
 * its table and one to each partial index whose predicate its row meets: for a table with a
 * `created_at` column, the partial indexes are counted on the rows created within the span (their
 * state at its end); for any other table, as if they always applied. An update that is not HOT
 * adds one per index (partial ones as if they applied); a HOT update none. Deletes add no entries.
 */
export interface RowWriteSnapshot {
  /** The database's clock when the snapshot was taken. */
  at: string;
  byTable: Map<string, { inserted: number; updated: number; hot: number; indexes: number }>;
}

export async function rowWriteSnapshot(orm: Orm): Promise<RowWriteSnapshot> {
  const em = orm.em.fork();
  const [{ at }] = await em.execute<Array<{ at: string }>>(`select clock_timestamp()::text as at`);
  // The statistics of this backend's own transactions are flushed at most once a second; the
  // other backends' within a second of their transactions.
  await em.execute('select pg_stat_force_next_flush()');
  await new Promise((resolve) => setTimeout(resolve, 1200));
  const rows: Array<{ relname: string; ins: string; upd: string; hot: string; indexes: number }> = await em.execute(
    `select t.relname, t.n_tup_ins as ins, t.n_tup_upd as upd, t.n_tup_hot_upd as hot,
            (select count(*)::int from pg_index i where i.indrelid = t.relid) as indexes
       from pg_stat_user_tables t`,
  );
  return {
    at,
    byTable: new Map(rows.map((r) => [r.relname, { inserted: Number(r.ins), updated: Number(r.upd), hot: Number(r.hot), indexes: r.indexes }])),
  };
}

/**
 * The entries an insert of a table's row adds on average over the rows created in the span: its
 * full indexes, plus each partial index's share of those rows that meet its predicate. Undefined
 * for a table without partial indexes or `created_at` (the plain estimate then holds).
 */
async function entriesPerInsertedRow(orm: Orm, table: string, from: string, to: string): Promise<number | undefined> {
  const em = orm.em.fork();
  const indexes = await em.execute<Array<{ predicate: string | null }>>(
    `select pg_get_expr(i.indpred, i.indrelid) as predicate
       from pg_index i join pg_class c on c.oid = i.indrelid join pg_namespace n on n.oid = c.relnamespace
      where c.relname = ? and n.nspname = current_schema()`,
    [table],
  );
  const partial = indexes.map((i) => i.predicate).filter((p): p is string => p !== null);
  if (!partial.length) return undefined;
  const [hasCreatedAt] = await em.execute<Array<{ n: number }>>(
    `select count(*)::int as n from information_schema.columns where table_schema = current_schema() and table_name = ? and column_name = 'created_at'`,
    [table],
  );
  if (!hasCreatedAt.n) return undefined;
  // Predicates come from the catalog (pg_get_expr), not from input; the table name is quoted.
  const counts = partial.map((p, n) => `count(*) filter (where ${p})::int as p${n}`).join(', ');
  const [row] = await em.execute<Array<Record<string, number>>>(
    `select count(*)::int as created, ${counts} from "${table.replace(/"/g, '""')}" where created_at >= ?::timestamptz and created_at <= ?::timestamptz`,
    [from, to],
  );
  if (!row.created) return undefined;
  const partialEntries = partial.reduce((sum, _, n) => sum + row[`p${n}`], 0);
  return indexes.length - partial.length + partialEntries / row.created;
}

/** Per unit (a mail): rows written and index entries added, in all and by the busiest tables. */
export async function rowWritesPerUnit(
  orm: Orm,
  from: RowWriteSnapshot,
  to: RowWriteSnapshot,
  units: number,
  skipTables: string[] = [],
): Promise<Record<string, string>> {
  const lines: Array<[string, number, number]> = [];
  let rows = 0;
  let entries = 0;
  for (const [table, now] of to.byTable) {
    if (skipTables.includes(table)) continue;
    const before = from.byTable.get(table) ?? { inserted: 0, updated: 0, hot: 0, indexes: now.indexes };
    const inserted = now.inserted - before.inserted;
    const updated = now.updated - before.updated;
    const hot = now.hot - before.hot;
    const tableRows = inserted + updated;
    if (!tableRows) continue;
    const perInsert = inserted ? ((await entriesPerInsertedRow(orm, table, from.at, to.at)) ?? now.indexes) : 0;
    const tableEntries = inserted * perInsert + (updated - hot) * now.indexes;
    rows += tableRows;
    entries += tableEntries;
    lines.push([`${table} (${inserted} ins, ${updated} upd, ${hot} HOT; ${perInsert.toFixed(1)} entries an insert)`, tableRows / units, tableEntries / units]);
  }
  const figures: Record<string, string> = {
    'rows written per mail': (rows / units).toFixed(2),
    'index entries per mail': (entries / units).toFixed(1),
  };
  for (const [name, r, e] of lines.sort((a, b) => b[1] - a[1]).slice(0, 6)) figures[`  ${name}`] = `${r.toFixed(2)} rows, ${e.toFixed(1)} entries`;
  return figures;
}
