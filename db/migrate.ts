import { createOrm } from './orm';

/** Applies every pending committed migration; the schema never changes any other way. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const orm = await createOrm(databaseUrl, { pool: { min: 0, max: 2 } });
  try {
    const applied = await orm.getMigrator().up();
    return applied.map((m) => m.name);
  } finally {
    await orm.close(true);
  }
}
