import { MikroORM, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { allEntities } from './entities';
import { migrationsList } from './migrations';
import type { Logger } from '../lib/logger';

export type Orm = MikroORM;

/**
 * Where the driver's own messages go. Knex prints a line of plain text to the console for each
 * pooled connection the server drops ("Connection Error: …", one per connection during a
 * database restart); with a logger they are JSON lines like the rest of the process's.
 */
function driverLog(logger: Logger | undefined) {
  if (!logger) return undefined;
  const log = (level: 'warn' | 'error' | 'debug') => (message: unknown) =>
    logger[level]({ event: 'database.driver', detail: String(message) }, level === 'warn' ? 'database driver warning' : 'database driver message');
  return { warn: log('warn'), error: log('error'), debug: log('debug'), deprecate: log('warn') };
}

export function ormOptions(databaseUrl: string, overrides: Partial<Options> = {}, logger?: Logger): Options {
  return {
    clientUrl: databaseUrl,
    entities: allEntities,
    extensions: [Migrator],
    migrations: { migrationsList, transactional: true, allOrNothing: true, snapshot: false, silent: true },
    discovery: { warnWhenNoEntities: true },
    pool: { min: 0, max: Number(process.env.DATABASE_POOL_MAX ?? 20) },
    // While PostgreSQL is away, a request learns it within seconds (the API answers 503) instead
    // of waiting a minute for a connection (knex's default) past any client's timeout.
    driverOptions: { acquireConnectionTimeout: 10_000, connection: { connectionTimeoutMillis: 5_000 }, log: driverLog(logger) },
    // Entities get their timestamps as Date, read and written in UTC. Raw statements (em.execute,
    // knex) get them as PostgreSQL's text: the driver's type parsers leave timestamptz, timestamp,
    // date and interval unparsed; read those rows through db/sql/rows.ts (queryRows, TimestampText,
    // dateOrNull). jsonb comes parsed either way.
    forceUtcTimezone: true,
    debug: false,
    allowGlobalContext: false,
    ...overrides,
  };
}

export async function createOrm(databaseUrl: string, overrides: Partial<Options> = {}, logger?: Logger): Promise<Orm> {
  return MikroORM.init(ormOptions(databaseUrl, overrides, logger));
}

/** One round trip to PostgreSQL (the health probe); rejects when the database does not answer. */
export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.fork().execute('select 1');
}
