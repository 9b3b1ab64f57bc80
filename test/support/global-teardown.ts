import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import type { Database } from '../../src/database/embedded-postgres';
import { serverUrl } from './databases';
import { undocumentedStatuses } from './observed-statuses';

export default async function globalTeardown() {
  try {
    await dropDatabases();
    checkObservedStatuses();
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

/** Fails the run when a route answered a status its entry in the API document does not list (test/support/observed-statuses.ts). */
function checkObservedStatuses() {
  const document = JSON.parse(readFileSync(join(__dirname, '..', '..', 'packages', 'client', 'openapi.json'), 'utf8'));
  const missing = undocumentedStatuses(document);
  if (missing.length) {
    throw new Error(
      `the API document does not list these answers the tests observed (document them on the route, then npm run client:generate):\n  ${missing.join('\n  ')}`,
    );
  }
}
