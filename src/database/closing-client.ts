import { Client, ClientConfig } from 'pg';

/**
 * node-postgres's Client, listening for its own 'error' from its first byte to its last, and closing its
 * connection when a statement goes unanswered past `query_timeout`.
 *
 * An 'error' event without a listener ends the process. PostgreSQL ends connections at any moment (a failover,
 * a restart, an operator's pg_terminate_backend: 57P01), and the pool and TypeORM each listen only part of a
 * client's life (the pool while it is idle, TypeORM while a query runner holds it, neither just after it
 * connects nor while a removed client is closing): under load a terminated connection met such a gap and the
 * process died. The error itself is not lost: a query in flight fails with it (503), and the pool drops a
 * client that is no longer queryable when it is released.
 *
 * pg itself only fails the query: the statement stays on the wire, whatever is sent next waits behind it,
 * and the pool lends that connection again and again (a database that stalled, a path that silently
 * dropped the connection), so every later query on it times out too. Closed (end() on a client with a
 * statement in flight destroys its socket), it is dropped by the pool when released, and replaced.
 */
export class ClosingClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }

  // pg's overloads, passed through unchanged.
  override query(...args: any[]): any {
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      result.catch((err: Error) => err.message === 'Query read timeout' && void this.end().catch(() => undefined));
    }
    return result;
  }
}
