import type { Orm } from '../../db/orm';

/**
 * Rows and index entries a span wrote, by table, from PostgreSQL's statistics: inserted and
 * updated rows, and an estimate of the index entries they added (an insert adds one per index of
 * its table, partial indexes counted as if they always applied; an update that is not HOT adds one
 * per index; a HOT update none). Deletes add no entries.
 */
export interface RowWriteSnapshot {
  byTable: Map<string, { inserted: number; updated: number; hot: number; indexes: number }>;
}

export async function rowWriteSnapshot(orm: Orm): Promise<RowWriteSnapshot> {
  const em = orm.em.fork();
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
    byTable: new Map(rows.map((r) => [r.relname, { inserted: Number(r.ins), updated: Number(r.upd), hot: Number(r.hot), indexes: r.indexes }])),
  };
}

/** Per unit (a mail): rows written and index entries added, in all and by the busiest tables. */
export function rowWritesPerUnit(from: RowWriteSnapshot, to: RowWriteSnapshot, units: number, skipTables: string[] = []): Record<string, string> {
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
    const tableEntries = inserted * now.indexes + (updated - hot) * now.indexes;
    if (!tableRows) continue;
    rows += tableRows;
    entries += tableEntries;
    lines.push([`${table} (${inserted} ins, ${updated} upd, ${hot} HOT)`, tableRows / units, tableEntries / units]);
  }
  const figures: Record<string, string> = {
    'rows written per mail': (rows / units).toFixed(2),
    'index entries per mail (estimate)': (entries / units).toFixed(1),
  };
  for (const [name, r, e] of lines.sort((a, b) => b[1] - a[1]).slice(0, 6)) figures[`  ${name}`] = `${r.toFixed(2)} rows, ${e.toFixed(1)} entries`;
  return figures;
}
