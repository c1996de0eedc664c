import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * Runs a statement with its parameters sent as PostgreSQL bind parameters, in the EntityManager's
 * transaction when it has one. `em.execute` quotes every parameter into the SQL text first
 * (MikroORM's formatQuery escapes it character by character), which for large text costs far more
 * CPU than sending it bound (the figures: docs/architecture/sending-path.md, step 2 "Record").
 * For statements that carry large text, such as rendered email bodies.
 */
export async function executeBound<Row>(em: EntityManager, sql: string, params: ReadonlyArray<string | number | boolean | null>): Promise<Row[]> {
  const query = em.getConnection().getKnex().raw(sql, params);
  const transaction = em.getTransactionContext();
  if (transaction) void query.transacting(transaction);
  const result = (await query) as { rows: Row[] };
  return result.rows;
}
