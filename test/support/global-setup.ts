import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { openDatabase } from '../../src/database/embedded-postgres';
import { runMigrations, typeOrmOptions } from '../../src/database/typeorm-options';
import { adminQuery, serverUrl } from './databases';
import { freePort } from './free-port';

/**
 * Uses DATABASE_URL's server when set (CI), else starts an embedded PostgreSQL of its own in a temp
 * directory. Then builds one migrated template database that every test file copies.
 */
export default async function globalSetup() {
  // Everything the tests write to the temp dir goes under one folder of this run, removed at teardown.
  process.env.TMPDIR = mkdtempSync(join(tmpdir(), 'billing-test-run-'));
  if (process.env.DATABASE_URL) {
    process.env.TEST_DATABASE_SERVER_URL = process.env.DATABASE_URL;
  } else {
    const dataDir = mkdtempSync(join(tmpdir(), 'billing-test-'));
    const db = await openDatabase({
      dataDir,
      port: await freePort(),
      log: { debug: () => undefined, warn: () => undefined },
    });
    (globalThis as { __TEST_DB__?: unknown }).__TEST_DB__ = { db };
    process.env.TEST_DATABASE_SERVER_URL = db.url;
  }
  process.env.TEST_RUN_ID = String(process.pid);
  const template = `billing_tmpl_${process.pid}`;
  process.env.TEST_TEMPLATE_DB = template;
  await adminQuery(`DROP DATABASE IF EXISTS ${template}`);
  await adminQuery(`CREATE DATABASE ${template}`);
  const dataSource = await new DataSource(typeOrmOptions({ url: serverUrl(template) })).initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
