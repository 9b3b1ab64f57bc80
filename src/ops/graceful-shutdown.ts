import type { Server } from 'node:http';

/**
 * Stops an HTTP server without cutting requests short: it stops listening at once (new connections are
 * refused), closes keep-alive connections as soon as they are idle, and lets in-flight requests finish.
 * Resolves true once every connection has ended, or false after `timeoutMs`, when whatever is left is cut.
 *
 * Because the caller closes the database pool only after this resolves, a request in flight either
 * completes (its transaction committed before its 2xx was sent) or has its connection cut (the client
 * sees no answer and retries); it never gets a success for work that was not stored.
 */
export function drainHttpServer(server: Server, timeoutMs: number): Promise<boolean> {
  // A request that still arrives on an open keep-alive connection is served, then its connection closed.
  server.prependListener('request', (_req, res) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  });
  return new Promise((resolve) => {
    // A connection whose request just finished becomes idle: close it on the next sweep.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => {
      clearInterval(sweep);
      server.closeAllConnections();
      resolve(false);
    }, timeoutMs);
    server.close(() => {
      clearInterval(sweep);
      clearTimeout(deadline);
      resolve(true);
    });
    server.closeIdleConnections();
  });
}
