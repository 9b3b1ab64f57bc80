import { rmSync } from 'node:fs';
import { Client } from 'pg';
import type { Database } from '../../src/database/embedded-postgres';
import { serverUrl } from './databases';

export default async function globalTeardown() {
  const embedded = (globalThis as { __TEST_DB__?: { db: Database; dataDir: string } }).__TEST_DB__;
  if (embedded) {
    await embedded.db.stop();
    rmSync(embedded.dataDir, { recursive: true, force: true });
    return;
  }
  // On a shared server, remove what this run created.
  const client = new Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT datname FROM pg_database WHERE starts_with(datname, $1) OR datname = $2`,
      [`billing_t_${process.env.TEST_RUN_ID}_`, process.env.TEST_TEMPLATE_DB],
    );
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
