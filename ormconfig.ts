// The DataSource used by `npm run migration:generate|run|revert|check`. It is built from the same options as
// the app (without its timeouts: a migration may take long), against DATABASE_DIRECT_URL (PostgreSQL itself,
// not a pooler), else DATABASE_URL, else the embedded PostgreSQL the app itself would use.
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/app-config';
import { openDatabase } from './src/database/embedded-postgres';
import { typeOrmOptions } from './src/database/typeorm-options';

export default (async () => {
  const config = loadConfig(process.env);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    log: { debug: () => undefined, warn: (m) => console.warn(m) },
  });
  process.once('beforeExit', () => void db.stop());
  return new DataSource(typeOrmOptions({ url: config.databaseDirectUrl ?? db.url }));
})();
