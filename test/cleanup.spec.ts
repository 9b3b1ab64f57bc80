import { spawn } from 'node:child_process';
import { connect, createServer, Server, Socket } from 'node:net';
import { closable, stopProcess } from './support/cleanup';
import { startTcpProxy } from './support/tcp-proxy';
import { waitFor } from './support/wait-for';

/** A Node process running `code`, once it printed "ready" (its signal handlers are set by then). */
async function nodeProcess(code: string) {
  const child = spawn(process.execPath, ['-e', `${code}; setInterval(() => undefined, 1000); console.log('ready')`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
    child.once('exit', () => reject(new Error('exited before it was ready')));
  });
  return child;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Connects to a local port; resolves with the socket once connected, or with the error code. */
const open = (port: number) =>
  new Promise<Socket | string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(socket));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });

const closed = (socket: Socket) => new Promise<void>((resolve) => (socket.destroyed ? resolve() : socket.once('close', () => resolve())));

describe('stopProcess: a process the tests started never outlives them', () => {
  it('SIGTERM first: a process that exits on it has exited by that signal when stop resolves', async () => {
    const child = await nodeProcess('');
    expect(await stopProcess(child)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(alive(child.pid!)).toBe(false);
  });

  it('a process that ignores SIGTERM is killed after the grace, and stop resolves only once it is gone', async () => {
    const child = await nodeProcess(`process.on('SIGTERM', () => undefined)`);
    expect(await stopProcess(child, { graceMs: 300 })).toEqual({ code: null, signal: 'SIGKILL' });
    expect(alive(child.pid!)).toBe(false);
  });

  it('a process that already exited: stop resolves with how it ended', async () => {
    const child = spawn(process.execPath, ['-e', 'process.exit(3)']);
    await new Promise((resolve) => child.once('exit', resolve));
    expect(await stopProcess(child)).toEqual({ code: 3, signal: null });
  });
});

describe('closing a listening socket with connections open', () => {
  let target: Server;
  let targetPort: number;
  beforeAll(async () => {
    // An echo server standing in for PostgreSQL behind the proxy.
    target = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetPort = (target.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => target.close(resolve));
  });

  it('the TCP proxy ends its open connections and stops listening', async () => {
    const proxy = await startTcpProxy(`postgres://x@127.0.0.1:${targetPort}/x`);
    const port = Number(new URL(proxy.url).port);
    const clients = [await open(port), await open(port)] as Socket[];
    for (const client of clients) {
      client.write('ping');
      await new Promise((resolve) => client.once('data', resolve)); // through the proxy and back
    }
    await proxy.close();
    await Promise.all(clients.map(closed));
    expect(await open(port)).toBe('ECONNREFUSED');
  });

  it('closable: close resolves though a client holds its connection open (server.close alone would wait for it)', async () => {
    const server = createServer(() => undefined);
    const listening = closable(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const client = (await open(port)) as Socket;
    client.on('error', () => undefined);
    await waitFor('the server to hold the connection', () => listening.sockets.size === 1);
    await listening.close();
    await closed(client);
    expect(await open(port)).toBe('ECONNREFUSED');
  });
});
