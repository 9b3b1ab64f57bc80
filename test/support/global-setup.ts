import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/database/embedded-postgres';
import { Client } from 'pg';
import { migrate } from '../../src/database/migrate';
import { browserMissingLine, findChromium, isCi } from './browser';
import { adminQuery, serverUrl } from './databases';
import { freePort } from './free-port';

/**
 * Uses DATABASE_URL's server when set (CI), else starts an embedded PostgreSQL of its own in a temp
 * directory. Then builds one migrated template database that every test file copies.
 */
export default async function globalSetup() {
  // Said once for the whole run; each browser test then returns at once (under CI=true they fail instead).
  if (!findChromium() && !isCi()) process.stdout.write(`\n${browserMissingLine()}\n`);
  // Everything the tests write to the temp dir goes under one folder of this run, removed at teardown; what
  // an interrupted run (Ctrl-C skips the teardown) left behind is removed here.
  sweepAbandonedRunFolders(tmpdir());
  process.env.TMPDIR = mkdtempSync(join(tmpdir(), `billing-test-run-${process.pid}-`));
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
  await dropAbandonedRunDatabases();
  await adminQuery(`DROP DATABASE IF EXISTS ${template}`);
  await adminQuery(`CREATE DATABASE ${template}`);
  await migrate(serverUrl(template), { lockTimeoutS: 300 });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Temp folders of runs whose jest process is gone: their embedded PostgreSQL (if any) is stopped, then removed. */
function sweepAbandonedRunFolders(dir: string) {
  for (const name of readdirSync(dir)) {
    const pid = Number(/^billing-test-run-(\d+)-/.exec(name)?.[1]);
    if (!pid || alive(pid)) continue;
    const folder = join(dir, name);
    for (const postmaster of findFiles(folder, 'postmaster.pid', 4)) {
      const serverPid = Number(readFileSync(postmaster, 'utf8').split('\n')[0]);
      if (serverPid && alive(serverPid)) process.kill(serverPid, 'SIGINT'); // PostgreSQL's fast shutdown
    }
    rmSync(folder, { recursive: true, force: true });
  }
}

function findFiles(dir: string, file: string, depth: number): string[] {
  if (depth < 0) return [];
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(dir, entry);
    if (entry === file) return [path];
    return statSync(path, { throwIfNoEntry: false })?.isDirectory() ? findFiles(path, file, depth - 1) : [];
  });
}

/** On a server of this machine, the databases of runs whose jest process is gone (same names as teardown's). */
async function dropAbandonedRunDatabases() {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(serverUrl()).hostname)) return;
  const client = new Client({ connectionString: serverUrl() });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT datname FROM pg_database WHERE datname ~ '^billing_(t|tmpl)_[0-9]+'`);
    for (const { datname } of rows as { datname: string }[]) {
      const pid = Number(/^billing_(?:t|tmpl)_(\d+)/.exec(datname)![1]);
      if (!alive(pid)) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
  } finally {
    await client.end();
  }
}
