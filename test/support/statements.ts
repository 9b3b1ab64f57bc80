import { AsyncLocalStorage } from 'node:async_hooks';
import { Server } from 'node:http';
import * as pg from 'pg';

export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * Every statement the app sends to PostgreSQL while handling the HTTP requests `work` makes (text and values, as
 * pg sends them; transaction control and settings left out unless `roundTrips`, which counts every one). The app's
 * connections are node-postgres's own clients, so every statement goes through pg.Client's query(); only those
 * made on behalf of a request count: the job queue's polling and its minutely cron (whose step uses the app's
 * pool) run meanwhile, at any moment.
 */
export async function requestStatements(server: Server, work: () => Promise<unknown>, { roundTrips = false } = {}): Promise<Statement[]> {
  const inRequest = new AsyncLocalStorage<true>();
  const emit = server.emit;
  server.emit = function (this: Server, event: string | symbol, ...args: unknown[]) {
    const passOn = () => Reflect.apply(emit, this, [event, ...args]) as boolean;
    return event === 'request' ? inRequest.run(true, passOn) : passOn();
  } as typeof server.emit;
  const seen: { text?: unknown; values?: unknown }[] = [];
  const original = pg.Client.prototype.query;
  const capture = jest.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    const [query, values] = args as [string | { text?: unknown; values?: unknown } | undefined, unknown];
    if (inRequest.getStore()) seen.push(typeof query === 'string' ? { text: query, values } : { text: query?.text, values: query?.values });
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original);
  try {
    await work();
  } finally {
    capture.mockRestore();
    server.emit = emit;
  }
  return seen
    .map(({ text, values }) => ({ text, values: Array.isArray(values) ? values : [] }))
    .filter((s): s is Statement => typeof s.text === 'string' && (roundTrips || !/^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|SET|RESET|SHOW)\b/i.test(s.text)));
}
