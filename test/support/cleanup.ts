import { ChildProcess } from 'node:child_process';
import { Server, Socket } from 'node:net';

/**
 * Teardown that holds on a loaded machine: the one way the tests stop a process they started (the built
 * server, the CLI, PgBouncer) and close a listening socket with connections still open (a TCP proxy, a
 * local HTTP server). Nothing a spec starts may outlive it, and its afterAll must not fail because the
 * machine is slow: a stop waits for the process's own exit, with a bound, then kills it and waits again.
 */

/** How long a process gets to exit after SIGTERM (a graceful shutdown drains requests and pools) before SIGKILL. */
export const STOP_GRACE_MS = 15_000;
/**
 * The Jest timeout of a hook that stops processes or closes apps: a wait, not a measure. Closing an app (its
 * worker, its pools) and dropping a database took over 30 s on a 2-core machine at load 17–30.
 */
export const TEARDOWN_TIMEOUT_MS = 120_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves when `child` has exited (at once when it already has, or never started). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/**
 * Stops `child`: SIGTERM, up to `graceMs` for it to exit, then SIGKILL; always resolves once it has exited,
 * with how. `group` signals its whole process group (a child spawned `detached`, e.g. under `script`).
 */
export async function stopProcess(child: ChildProcess, opts: { graceMs?: number; group?: boolean } = {}): Promise<Exit> {
  const exited = exitOf(child);
  const signal = (name: NodeJS.Signals) => {
    try {
      if (opts.group) process.kill(-child.pid!, name);
      else child.kill(name);
    } catch {
      // already gone
    }
  };
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return exited;
  signal('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), opts.graceMs ?? STOP_GRACE_MS)));
  const gone = await Promise.race([exited, graceOver]);
  clearTimeout(timer);
  if (gone) return gone;
  signal('SIGKILL');
  return exited;
}

/** Stops every process of `children` at once (see stopProcess). */
export async function stopProcesses(children: Iterable<ChildProcess | undefined>, opts: { graceMs?: number } = {}): Promise<void> {
  await Promise.all([...children].filter((c): c is ChildProcess => c !== undefined).map((c) => stopProcess(c, opts)));
}

/**
 * Tracks the connections of `server` (call it before it listens) so that `close()` can end them: every open
 * socket destroyed, then the listening socket closed; resolves once it is (also when it never listened).
 */
export function closable(server: Server): { sockets: Set<Socket>; close(): Promise<void> } {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return {
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve()); // with an error when it was not listening: closed all the same
        for (const socket of sockets) socket.destroy();
      }),
  };
}
