import { Client } from 'pg';

/**
 * node-postgres's Client, closing its connection when a statement goes unanswered past `query_timeout`.
 * pg itself only fails the query: the statement stays on the wire, whatever is sent next waits behind it,
 * and the pool lends that connection again and again (a database that stalled, a path that silently
 * dropped the connection), so every later query on it times out too. Closed (end() on a client with a
 * statement in flight destroys its socket), it is dropped by the pool when released, and replaced.
 */
export class ClosingClient extends Client {
  // pg's overloads, passed through unchanged.
  override query(...args: any[]): any {
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      result.catch((err: Error) => err.message === 'Query read timeout' && void this.end().catch(() => undefined));
    }
    return result;
  }
}
