/** `npm run migrate` (or, compiled, `node dist/scripts/migrate.js`): applies pending migrations to DATABASE_URL (used by docker-compose). */
import { loadConfig, requireSetting } from '../lib/config';
import { createLogger } from '../lib/logger';
import { runMigrations } from '../db/migrate';

async function main() {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'migrate' });
  const applied = await runMigrations(requireSetting(config.databaseUrl, 'DATABASE_URL'));
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
