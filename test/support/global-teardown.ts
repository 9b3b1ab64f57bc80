import { rmSync } from 'node:fs';
import { Client } from 'pg';
import type { Database } from '../../src/database/embedded-postgres';
import { serverUrl } from './databases';

export default async function globalTeardown() {
  try {
    await dropDatabases();
  } finally {
    // The run's temp folder (global-setup pointed TMPDIR at it), with the embedded database's data if any.
    if (process.env.TMPDIR?.includes('billing-test-run-')) rmSync(process.env.TMPDIR, { recursive: true, force: true });
  }
}

async function dropDatabases() {
  const embedded = (globalThis as { __TEST_DB__?: { db: Database } }).__TEST_DB__;
  if (embedded) {
    await embedded.db.stop();
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
