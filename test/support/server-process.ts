import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exitOf, Exit, stopProcess } from './cleanup';
import { freePort } from './free-port';
import { waitFor } from './wait-for';
import { ROOT } from './run-cli';

export { waitFor };

// The built server, as production runs it (`npm test` builds first; alone: `npm run build`).
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');

/**
 * How long a start may take before health answers: a wait, not a measure. A start on a loaded 2-core machine
 * (CI's test:all beside the browser specs) has taken over 20 s, and over 60 s at load 19 (two starts at once).
 */
export const START_TIMEOUT_MS = 180_000;
/** The Jest timeout of a test that starts a server process and waits for it. */
export const PROCESS_TEST_TIMEOUT_MS = 2 * START_TIMEOUT_MS;

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  output(): string;
  exited: Promise<Exit>;
  /** SIGTERM, then SIGKILL if it has not exited within the grace (test/support/cleanup.ts); resolves once it has. */
  stop(): Promise<Exit>;
  /** Resolves once GET /api/health answers 200; rejects (with the output) if the process exits first. */
  healthy(timeoutMs?: number): Promise<void>;
}

/** GET a path of a local server, without keep-alive; resolves with the status, or rejects on a socket error. */
export function getStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
  });
}

/**
 * Starts `node dist/src/main.js` in an empty directory (no developer .env; `files` are written there first,
 * e.g. a `.env` of the test's own), with `env` on top of a minimal one.
 */
export async function spawnServer(env: Record<string, string>, port?: number, files: Record<string, string> = {}): Promise<ServerProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
  const listenOn = port ?? (await freePort());
  const dataDir = mkdtempSync(join(tmpdir(), 'billing-server-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dataDir, name), text);
  const child = spawn(process.execPath, [MAIN], {
    cwd: dataDir,
    env: { PATH: process.env.PATH, NODE_ENV: 'test', PORT: String(listenOn), DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env },
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = exitOf(child);
  let gone = false;
  void exited.then(() => (gone = true));
  return {
    child,
    port: listenOn,
    output: () => output,
    exited,
    stop: () => stopProcess(child),
    healthy: async (timeoutMs = START_TIMEOUT_MS) => {
      const outcome = await waitFor(
        'the service to become healthy',
        async () => (gone ? 'exited' : (await getStatus(listenOn, '/api/health')) === 200 ? 'healthy' : undefined),
        timeoutMs,
      ).catch((err: Error) => err.message);
      if (outcome !== 'healthy') throw new Error(`${outcome === 'exited' ? 'the service exited during start' : outcome}:\n${output}`);
    },
  };
}
