import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * A timestamp column as a raw statement returns it: MikroORM's PostgreSQL driver installs type
 * parsers that hand `timestamptz`, `timestamp`, `date` and `interval` back as PostgreSQL's text
 * (`2026-11-22 10:00:00.123+00`), not as Date; only entities loaded through the ORM get Dates.
 * The other column types come as node-postgres gives them: `int4` a number, `int8` (`count(*)`
 * uncast) and `numeric` a string, `jsonb` parsed, `text[]` an array.
 */
export type TimestampText = string;

/**
 * Runs one statement and returns its rows as `Row` says they are. `em.execute` types every row
 * as any entity's data; the interface given here is the one place a statement's columns are
 * written down, so a mapper reads typed fields. Nothing is checked at run time: the interface
 * has to match the statement's select list.
 */
export async function queryRows<Row extends object>(em: EntityManager, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
  return (await em.execute(sql, [...params])) as unknown as Row[];
}

/** A timestamp column that may be null, as a Date (an empty value reads as null, as it always has). */
export function dateOrNull(value: TimestampText | Date | null | undefined): Date | null {
  return value ? new Date(value) : null;
}
