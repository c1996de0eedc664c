import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { allEntities } from './entities';
import { migrationsList } from './migrations';

export type Orm = MikroORM;

export function ormOptions(databaseUrl: string, overrides: Partial<Options> = {}): Options {
  return {
    clientUrl: databaseUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    discovery: { warnWhenNoEntities: true },
    pool: { min: 0, max: Number(process.env.DATABASE_POOL_MAX ?? 20) },
    // While PostgreSQL is away, a request learns it within seconds (the API answers 503) instead
    // of waiting a minute for a connection (knex's default) past any client's timeout.
    driverOptions: { acquireConnectionTimeout: 10_000, connection: { connectionTimeoutMillis: 5_000 } },
    // Timestamps come back as Date; jsonb stays parsed by the driver.
    forceUtcTimezone: true,
    debug: false,
    allowGlobalContext: false,
    ...overrides,
  };
}

export async function createOrm(databaseUrl: string, overrides: Partial<Options> = {}): Promise<Orm> {
  return MikroORM.init(ormOptions(databaseUrl, overrides));
}

/** One round trip to PostgreSQL (the health probe); rejects when the database does not answer. */
export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.fork().execute('select 1');
}
