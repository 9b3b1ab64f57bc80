import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SESSION_SETTINGS } from '../../src/database/typeorm-options';
import { stopProcess, TEARDOWN_TIMEOUT_MS } from './cleanup';
import { adminQuery, serverUrl } from './databases';
import { freePort } from './free-port';

/**
 * A PgBouncer in transaction pooling mode in front of the test PostgreSQL, started by the tests (Debian's
 * `pgbouncer`; `.ci/run` installs it). Stricter than production on purpose, so that whatever relies on
 * session state fails every time rather than now and then:
 *
 * - `server_reset_query = DISCARD ALL` after **every** transaction (`server_reset_query_always = 1`): a
 *   named prepared statement, a session SET, a temporary table or a session advisory lock never survives
 *   its transaction, even when the same server connection happens to serve the client again;
 * - no `max_prepared_statements` (0, which is also 1.18's only behaviour): PgBouncer does not track named
 *   statements, so a second use of one fails ("prepared statement … does not exist").
 *
 * Like a managed pooler that the service's team cannot reconfigure (spec §1), its `ignore_startup_parameters`
 * names `extra_float_digits` alone: a connection that sends `statement_timeout` or `options` at start-up is
 * refused ("unsupported startup parameter"). Behind it the limit comes from SET LOCAL in a transaction, and
 * outside one from the role's setting (`operatorsStatementTimeout`).
 */
export interface PgBouncer {
  /** The same database, through PgBouncer. */
  urlFor(directUrl: string): string;
  output(): string;
  stop(): Promise<void>;
}

export function pgBouncerBinary(): string {
  for (const path of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (existsSync(path)) return path;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('pgbouncer is not installed: apt-get install -y pgbouncer (.ci/run does it)');
  }
}

/**
 * `ignoreStartupParameters`: its setting of that name (default `extra_float_digits` alone, as above); a pooler whose
 * operators list `statement_timeout` and `options` there drops them without a word instead of refusing them.
 */
export async function startPgBouncer(target = serverUrl(), ignoreStartupParameters = ['extra_float_digits']): Promise<PgBouncer> {
  const binary = pgBouncerBinary();
  const version = /PgBouncer (\d+)\.(\d+)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }));
  const [major, minor] = version ? [Number(version[1]), Number(version[2])] : [1, 0];
  const server = new URL(target);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const port = await freePort();
  // Readable by the unprivileged user PgBouncer switches to when started as root.
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'));
  chmodSync(dir, 0o755);
  const serverSide = [`host=${server.hostname}`, `port=${server.port || 5432}`, `user=${user}`, password ? `password=${password}` : '']
    .filter(Boolean)
    .join(' ');
  const ini = [
    '[databases]',
    // Every database name maps to the same name on the test server.
    `* = ${serverSide}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'pool_mode = transaction',
    'server_reset_query = DISCARD ALL',
    'server_reset_query_always = 1',
    // As its operators leave it (the stock pgbouncer.ini's only suggestion, for JDBC): any other startup
    // parameter, such as statement_timeout or options, makes PgBouncer refuse the connection.
    `ignore_startup_parameters = ${ignoreStartupParameters.join(', ')}`,
    'max_client_conn = 400',
    'default_pool_size = 40',
    ...(major > 1 || minor >= 21 ? ['max_prepared_statements = 0'] : []),
    ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
  ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o644 });

  const child: ChildProcess = spawn(binary, [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  await waitListening(port, child, () => output);
  return {
    urlFor(directUrl: string) {
      const url = new URL(directUrl);
      url.hostname = '127.0.0.1';
      url.port = String(port);
      url.username = user;
      url.password = '';
      return url.toString();
    },
    output: () => output,
    async stop() {
      await stopProcess(child);
    },
  };
}

async function waitListening(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}):\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) {
      await stopProcess(child, { graceMs: 0 });
      throw new Error(`pgbouncer did not listen on ${port}:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

let current: PgBouncer | undefined;

let registered = false;

/**
 * For a spec file: every `startTestApp` of the file then reaches its database through one PgBouncer
 * (DATABASE_URL), with DATABASE_DIRECT_URL on PostgreSQL itself for the migrations. Calling it again in the
 * same Jest file (a group imports several specs that ask for it) is a no-op: one PgBouncer for all.
 */
export function throughPgBouncer(): void {
  if (registered) return;
  registered = true;
  beforeAll(async () => {
    current = await startPgBouncer();
  });
  afterAll(async () => {
    await current?.stop();
    current = undefined;
  }, TEARDOWN_TIMEOUT_MS);
}

/** The PgBouncer of this spec file, if it asked for one. */
export function activePgBouncer(): PgBouncer | undefined {
  return current;
}

/**
 * The operator's part behind PgBouncer (docs/operations.md): a default statement_timeout that server
 * connections start with, for statements outside a transaction, and the service's session settings (JIT off).
 * Production sets them on the service's role; the tests share one role, so each database gets its own, which
 * PostgreSQL applies the same way (and which a database that is recycled must not keep: drop it instead).
 */
export async function operatorsStatementTimeout(databaseName: string, ms: number): Promise<void> {
  await adminQuery(`ALTER DATABASE ${databaseName} SET statement_timeout = ${Math.floor(ms)}`);
  for (const [name, value] of Object.entries(SESSION_SETTINGS)) await adminQuery(`ALTER DATABASE ${databaseName} SET ${name} = ${value}`);
}
