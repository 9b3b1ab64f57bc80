import * as pg from 'pg';

/**
 * What every connection of the app's pool does to each statement it sends, so that the service works
 * the same on a direct connection and behind PgBouncer in transaction mode (where session state is lost
 * between transactions):
 *
 * - **A server-side time limit on every statement, without session state.** A statement sent outside a
 *   transaction goes out after `SELECT set_config('statement_timeout', …, true)` in the same round trip
 *   (one Sync, so one implicit transaction). `is_local = true` is `SET LOCAL`, which itself would warn —
 *   in the server log, on every statement — outside an explicit transaction block; `set_config` does not.
 *   A `START TRANSACTION` (or BEGIN) sent outside a transaction is followed, in the same Query message, by
 *   `SET LOCAL statement_timeout`, which holds until its COMMIT or ROLLBACK and, unlike a SELECT, takes no
 *   snapshot (a `SET TRANSACTION ISOLATION LEVEL` may still follow). Nothing outlives its transaction, so
 *   PgBouncer may hand the server connection to anyone after it. When the limit strikes, PostgreSQL rolls
 *   the transaction back: a request that fails because the database was slow has changed nothing.
 * - **No named prepared statements when `namedStatements` is off**: a name is dropped and the statement
 *   sent unnamed, because a pooler in transaction mode may run the next Bind on a server connection that
 *   never saw the Parse.
 *
 * Whether a statement is inside a transaction is what PostgreSQL itself said in its last ReadyForQuery
 * (`getTransactionStatus()`), read when the statement is written, not when it was queued.
 */
export interface StatementGuardOptions {
  /** 0: no limit (migrations, which may legitimately run long). */
  statementTimeoutMs: number;
  namedStatements: boolean;
}

// pg's Query, with the members this file overrides (they are the Submittable protocol pg-cursor also uses).
interface QueryInternals {
  text: string;
  name?: string;
  callback?: (err: Error | null, res?: unknown) => void;
  query_timeout?: number;
  requiresPreparation(): boolean;
  submit(connection: Connection): Error | null;
  prepare(connection: Connection): void;
  handleRowDescription(msg: unknown): void;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: Connection): void;
}
interface Connection {
  parse(msg: { text: string; name: string }): void;
  bind(msg: { portal: string; statement: string; values: unknown[] }): void;
  execute(msg: { portal: string; rows: number }): void;
}
const Query = pg.Query as unknown as new (config: unknown, values?: unknown, callback?: unknown) => QueryInternals;

// With named statements allowed, the setting is itself one, parsed once per connection: 5–13 µs of database
// CPU per statement instead of 20–25 µs for parsing and planning it every time (measured, see README).
const SETTING_NAME = 'statement_timeout_setting';
const settingPrepared = new WeakSet<Connection>();

// A statement that opens a transaction (and nothing else), as TypeORM and transaction.ts send it.
const BEGINS_TRANSACTION = /^\s*(BEGIN|START\s+TRANSACTION)\b[^;]*;?\s*$/i;

interface TimeoutSql {
  /** A statement of its own, before the caller's in the same implicit transaction. */
  before: string;
  /** After a START TRANSACTION, inside the transaction it opens. */
  after: string;
}

class GuardedQuery extends Query {
  /** Where the setting goes with this statement, decided when it is written. */
  private setting: 'none' | 'before' | 'after' = 'none';
  /** CommandCompletes received: one of them answers the setting, not the caller. */
  private completions = 0;

  constructor(
    private readonly client: pg.Client,
    private readonly timeoutSql: TimeoutSql | undefined,
    private readonly namedSetting: boolean,
    config: unknown,
    values: unknown,
    callback: unknown,
  ) {
    super(config, values, callback);
  }

  override submit(connection: Connection): Error | null {
    const outside = this.timeoutSql !== undefined && this.client.getTransactionStatus() === 'I';
    const simple = !this.requiresPreparation();
    this.setting = !outside ? 'none' : simple && BEGINS_TRANSACTION.test(this.text) ? 'after' : 'before';
    if (this.setting === 'none' || !simple) return super.submit(connection);
    // Simple query protocol: one Query message of several statements is one round trip.
    const text = this.text;
    this.text = this.setting === 'after' ? `${text.replace(/;\s*$/, '')};${this.timeoutSql!.after}` : `${this.timeoutSql!.before};${text}`;
    try {
      return super.submit(connection);
    } finally {
      this.text = text;
    }
  }

  override prepare(connection: Connection): void {
    if (this.setting === 'before') {
      // Extended protocol: (Parse)/Bind/Execute of the setting, then the statement's own, then one Sync.
      const name = this.namedSetting ? SETTING_NAME : '';
      if (!name || !settingPrepared.has(connection)) connection.parse({ text: this.timeoutSql!.before, name });
      if (name) settingPrepared.add(connection);
      connection.bind({ portal: '', statement: name, values: [] });
      connection.execute({ portal: '', rows: 0 });
    }
    super.prepare(connection);
  }

  // The setting's own answer (a row description in the simple protocol, its row, its command tag) is not
  // the caller's result.
  private answersSetting(): boolean {
    return this.setting === 'before' && this.completions === 0;
  }

  override handleRowDescription(msg: unknown): void {
    if (!this.answersSetting()) super.handleRowDescription(msg);
  }

  override handleDataRow(msg: unknown): void {
    if (!this.answersSetting()) super.handleDataRow(msg);
  }

  override handleCommandComplete(msg: unknown, connection: Connection): void {
    const settings = this.answersSetting() || (this.setting === 'after' && this.completions === 1);
    this.completions++;
    if (!settings) super.handleCommandComplete(msg, connection);
  }
}

/** A pg.Client class applying `options` to every statement (given to pg.Pool as its `Client`). */
export function guardedClient(options: StatementGuardOptions): typeof pg.Client {
  const ms = Math.floor(options.statementTimeoutMs);
  const timeoutSql: TimeoutSql | undefined =
    ms > 0
      ? { before: `SELECT set_config('statement_timeout', '${ms}', true)`, after: `SET LOCAL statement_timeout = ${ms}` }
      : undefined;
  return class GuardedClient extends pg.Client {
    override query(config: any, values?: any, callback?: any): any {
      if (config == null || typeof config.submit === 'function') return super.query(config, values, callback);
      const query = new GuardedQuery(this, timeoutSql, options.namedStatements, config, values, callback);
      if (!options.namedStatements) query.name = undefined;
      if (typeof config === 'object' && config.query_timeout) query.query_timeout = config.query_timeout;
      let result: Promise<unknown> | undefined;
      if (!query.callback) {
        // What pg's own query() answers for a text or a config: a promise of the result.
        result = new Promise((resolve, reject) => {
          query.callback = (err, res) => (err ? reject(err) : resolve(res));
        });
      }
      super.query(query as unknown as pg.Submittable);
      return result;
    }
  };
}
