import { createServer, Socket } from 'node:net';
import { closable } from './cleanup';

/**
 * A TCP proxy in front of PostgreSQL that a test can cut (every open connection is reset and new
 * ones are dropped at once) and restore, to simulate the database going away mid-run.
 */
export async function startTcpProxy(targetUrl: string) {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  let cut = false;
  let stalled = false;
  const server = createServer((client) => {
    if (cut) return client.destroy();
    if (stalled) {
      // Accept and never answer: the database "hangs".
      sockets.add(client);
      client.on('error', () => undefined);
      client.on('close', () => sockets.delete(client));
      return;
    }
    const upstream = new Socket();
    upstream.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  const listening = closable(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const proxied = new URL(targetUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return {
    url: proxied.toString(),
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    /** Open connections stop moving bytes and new ones are accepted but never answered. */
    stall() {
      stalled = true;
      for (const s of sockets) s.pause();
    },
    restore() {
      cut = false;
      stalled = false;
    },
    /** Ends every connection (both sides) and stops listening; resolves once closed. */
    close: async () => {
      for (const s of sockets) s.destroy();
      await listening.close();
    },
  };
}
