import * as pg from 'pg';

/**
 * What every connection of the app's pool does to each statement it sends, so that the service works
 * the same on a direct connection and behind PgBouncer in transaction mode (where session state is lost
 * between transactions), in as few round trips as the statements allow:
 *
 * - **A server-side time limit on every statement, without session state.** A statement sent outside a
 *   transaction goes out after `SELECT set_config('statement_timeout', …, true)` in the same round trip
 *   (one Sync, so one implicit transaction). `is_local = true` is `SET LOCAL`, which itself would warn —
 *   in the server log, on every statement — outside an explicit transaction block; `set_config` does not.
 *   A transaction gets `SET LOCAL statement_timeout` right after its BEGIN, which holds until its COMMIT
 *   or ROLLBACK and, unlike a SELECT, takes no snapshot (a `SET TRANSACTION ISOLATION LEVEL` may still
 *   follow). Nothing outlives its transaction, so PgBouncer may hand the server connection to anyone after
 *   it. When the limit strikes, PostgreSQL rolls the transaction back: a request that fails because the
 *   database was slow has changed nothing.
 * - **BEGIN travels with the transaction's first statement.** A `BEGIN`/`START TRANSACTION` is answered at
 *   once and sent, with the time limit, in front of the next statement, in its round trip: BEGIN takes no
 *   snapshot and no lock, so nothing can tell the difference but the clock. A COMMIT or ROLLBACK of a
 *   transaction that sent nothing sends nothing.
 * - **A statement may bring company** (`StatementExtras`, through `preparedQuery`): statements to run
 *   before it in the same round trip (`before`: each completes before the next starts, and each statement
 *   takes its own snapshot, so a lock taken by one is held when the next one reads), and the COMMIT of its
 *   transaction after it (`commit`). The transaction's own COMMIT that follows is then answered here.
 * - **No named prepared statements when `namedStatements` is off**: a name is dropped and the statement
 *   sent unnamed, because a pooler in transaction mode may run the next Bind on a server connection that
 *   never saw the Parse.
 *
 * One round trip is one write and one wake-up on each side: on this service's hot paths it costs more
 * CPU than most statements themselves (measured, see the README's Performance section).
 */
export interface StatementGuardOptions {
  /** 0: no limit (migrations, which may legitimately run long). */
  statementTimeoutMs: number;
  namedStatements: boolean;
}

/** What a caller may send along with one statement (extended protocol: a `name` or `values`). */
export interface StatementExtras {
  /** Statements run just before it, in the same round trip; their answers are dropped. */
  before?: { text: string; values: unknown[]; name?: string }[];
  /** Commit the open transaction right after it, in the same round trip. Nothing may fail after it. */
  commit?: boolean;
}

// pg's Query, with the members this file overrides (they are the Submittable protocol pg-cursor also uses).
interface QueryInternals {
  text: string;
  name?: string;
  values?: unknown[];
  callback?: (err: Error | null, res?: unknown) => void;
  query_timeout?: number;
  requiresPreparation(): boolean;
  hasBeenParsed(connection: Connection): boolean;
  submit(connection: Connection): Error | null;
  prepare(connection: Connection): void;
  _getRows(connection: Connection, rows: number | undefined): void;
  handleRowDescription(msg: unknown): void;
  handleDataRow(msg: unknown): void;
  handleCommandComplete(msg: unknown, connection: Connection): void;
  handleError(err: Error, connection: Connection): void;
  handleReadyForQuery(connection: Connection): void;
}
interface Connection {
  /** node-postgres's record of the statements this connection has prepared, by name. */
  parsedStatements: Record<string, string>;
  parse(msg: { text: string; name: string }): void;
  bind(msg: { portal: string; statement: string; values: unknown[]; valueMapper?: (value: unknown) => unknown }): void;
  execute(msg: { portal: string; rows: number }): void;
  sync(): void;
}
const Query = pg.Query as unknown as new (config: unknown, values?: unknown, callback?: unknown) => QueryInternals;
const { prepareValue } = require('pg/lib/utils') as { prepareValue: (value: unknown) => unknown };

// With named statements allowed, the setting is itself one, parsed once per connection: 5–13 µs of database
// CPU per statement instead of 20–25 µs for parsing and planning it every time (measured, see README).
const SETTING_NAME = 'statement_timeout_setting';
/** Where a Parse of a batch came from: a leading statement (by name; '' unnamed), the caller's, its COMMIT. */
type ParseOf = { leading: string } | 'callers' | 'commit';

// A statement that opens a transaction, one that ends it (and nothing else), as TypeORM and transaction.ts send them.
const BEGINS_TRANSACTION = /^\s*(BEGIN|START\s+TRANSACTION)\b[^;]*;?\s*$/i;
const ENDS_TRANSACTION = /^\s*(COMMIT|END|ROLLBACK|ABORT)\s*;?\s*$/i;

interface TimeoutSql {
  /** Outside a transaction: a statement of its own, before the caller's in the same implicit transaction. */
  outside: string;
  /** Inside a transaction, right after its BEGIN. */
  inside: string;
}

interface Leading {
  text: string;
  values: unknown[];
  /** Named (the time-limit setting): parsed once per connection. */
  name?: string;
}

class GuardedQuery extends Query {
  /** Statements sent ahead of the caller's in the same round trip (decided when it is written). */
  private leading: Leading[] = [];
  /** CommandCompletes received: the first `leading.length` answer the leading statements, one after the caller's answers its COMMIT. */
  private completions = 0;
  private failed = false;
  /** The Parse messages written, in order: each ParseComplete answers the first one not answered yet. */
  private readonly parses: ParseOf[] = [];

  constructor(
    private readonly client: GuardedClientState,
    private readonly timeoutSql: TimeoutSql | undefined,
    /** Named statements allowed (the setting, `before` statements given a name). */
    private readonly namedStatements: boolean,
    /** The BEGIN held back for this statement, if it is its transaction's first. */
    private readonly begin: string | undefined,
    private readonly extras: StatementExtras,
    config: unknown,
    values: unknown,
    callback: unknown,
  ) {
    super(config, values, callback);
  }

  override submit(connection: Connection): Error | null {
    const extended = this.requiresPreparation();
    if (!extended && (this.extras.before?.length || this.extras.commit)) {
      return new Error('statements sent before or a commit after need the extended protocol (a name or values)');
    }
    this.leading = [];
    if (this.begin) {
      this.leading.push({ text: this.begin, values: [] });
      if (this.timeoutSql) this.leading.push({ text: this.timeoutSql.inside, values: [] });
    } else if (this.timeoutSql && this.client.getTransactionStatus() === 'I') {
      this.leading.push({ text: this.timeoutSql.outside, values: [], name: this.namedStatements ? SETTING_NAME : undefined });
    }
    this.leading.push(...(this.extras.before ?? []).map((b) => ({ ...b, name: this.namedStatements ? b.name : undefined })));
    if (!this.leading.length || extended) return super.submit(connection);
    // Simple query protocol: one Query message of several statements is one round trip.
    const text = this.text;
    this.text = [...this.leading.map((s) => s.text), text].join(';');
    try {
      return super.submit(connection);
    } finally {
      this.text = text;
    }
  }

  override prepare(connection: Connection): void {
    // Extended protocol: (Parse)/Bind/Execute of each leading statement, then the caller's, then one Sync.
    for (const statement of this.leading) {
      const name = statement.name ?? '';
      if (!name || connection.parsedStatements[name] === undefined) {
        connection.parse({ text: statement.text, name });
        this.parses.push({ leading: name });
      }
      connection.bind({ portal: '', statement: name, values: statement.values, valueMapper: prepareValue });
      connection.execute({ portal: '', rows: 0 });
    }
    if (!this.hasBeenParsed(connection)) this.parses.push('callers');
    super.prepare(connection);
  }

  /**
   * A ParseComplete arrived: whether it answers the caller's Parse (node-postgres then records the caller's
   * statement as prepared; it would do so for any ParseComplete). A leading named statement is recorded
   * here, in the same record, only once the server has parsed it: after an error, the statements behind
   * it in the batch were never parsed, and are parsed again next time.
   */
  parseCompleted(connection: Connection): boolean {
    const of = this.parses.shift();
    if (of && typeof of === 'object' && of.leading) {
      connection.parsedStatements[of.leading] = this.leading.find((s) => s.name === of.leading)!.text;
    }
    return of === 'callers';
  }

  // pg writes the caller's Execute and the Sync here: the COMMIT goes between them.
  override _getRows(connection: Connection, rows: number | undefined): void {
    if (!this.extras.commit || rows) return super._getRows(connection, rows);
    connection.execute({ portal: '', rows: 0 });
    connection.parse({ text: 'COMMIT', name: '' });
    this.parses.push('commit');
    connection.bind({ portal: '', statement: '', values: [] });
    connection.execute({ portal: '', rows: 0 });
    connection.sync();
  }

  /** Whether the message being handled answers a leading statement or the COMMIT, not the caller. */
  private notTheCallers(): boolean {
    return this.completions < this.leading.length || (this.extras.commit === true && this.completions > this.leading.length);
  }

  override handleRowDescription(msg: unknown): void {
    if (!this.notTheCallers()) super.handleRowDescription(msg);
  }

  override handleDataRow(msg: unknown): void {
    if (!this.notTheCallers()) super.handleDataRow(msg);
  }

  override handleCommandComplete(msg: unknown, connection: Connection): void {
    const skip = this.notTheCallers();
    this.completions++;
    if (!skip) super.handleCommandComplete(msg, connection);
  }

  override handleError(err: Error, connection: Connection): void {
    this.failed = true;
    super.handleError(err, connection);
  }

  override handleReadyForQuery(connection: Connection): void {
    if (this.extras.commit && !this.failed) this.client.committedEarly = true;
    super.handleReadyForQuery(connection);
  }
}

interface GuardedClientState {
  getTransactionStatus(): string | null;
  committedEarly: boolean;
}

/** What node-postgres answers for a statement that sent nothing (BEGIN held back, COMMIT already sent). */
function answeredHere(text: string, callback: ((err: Error | null, res?: unknown) => void) | undefined): Promise<unknown> | undefined {
  const command = /^\s*(\w+)/.exec(text)![1].toUpperCase();
  const result = { command: command === 'START' ? 'BEGIN' : command === 'END' ? 'COMMIT' : command, rowCount: null, oid: null, rows: [], fields: [] };
  if (!callback) return Promise.resolve(result);
  process.nextTick(() => callback(null, result));
  return undefined;
}

/** A pg.Client class applying `options` to every statement (given to pg.Pool as its `Client`). */
export function guardedClient(options: StatementGuardOptions): typeof pg.Client {
  const ms = Math.floor(options.statementTimeoutMs);
  const timeoutSql: TimeoutSql | undefined =
    ms > 0 ? { outside: `SELECT set_config('statement_timeout', '${ms}', true)`, inside: `SET LOCAL statement_timeout = ${ms}` } : undefined;
  return class GuardedClient extends pg.Client implements GuardedClientState {
    /** A BEGIN not sent yet: it goes with the next statement. */
    private heldBegin: string | undefined;
    /** The last statement committed its transaction itself: the COMMIT that follows sends nothing. */
    committedEarly = false;

    override query(config: any, values?: any, callback?: any): any {
      if (config == null) return super.query(config, values, callback);
      const text: unknown = typeof config === 'string' ? config : config.text;
      const cb = typeof values === 'function' ? values : callback;
      const committed = this.committedEarly;
      this.committedEarly = false;
      if (typeof config.submit === 'function') {
        // A ready-made Submittable (pg-cursor, a pg Query) goes out as it is: a held BEGIN goes first.
        if (this.heldBegin) this.sendBegin();
        return super.query(config, values, callback);
      }
      const simple = typeof text === 'string' && (typeof config === 'string' || (!config.name && !config.values)) && (typeof values !== 'object' || !values?.length);
      if (simple && BEGINS_TRANSACTION.test(text) && !this.heldBegin) {
        this.heldBegin = text.replace(/;\s*$/, '');
        return answeredHere(text, cb);
      }
      if (simple && ENDS_TRANSACTION.test(text) && (this.heldBegin || (committed && /^\s*(COMMIT|END)/i.test(text)))) {
        this.heldBegin = undefined;
        return answeredHere(text, cb);
      }
      const extras: StatementExtras = typeof config === 'object' ? { before: config.before, commit: config.commit } : {};
      const query = new GuardedQuery(this, timeoutSql, options.namedStatements, this.heldBegin, extras, config, values, callback);
      this.heldBegin = undefined;
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

    /** Sends the held BEGIN (with the time limit) as a statement of its own; its answer is nobody's. */
    private sendBegin() {
      const begin = this.heldBegin!;
      this.heldBegin = undefined;
      super.query(timeoutSql ? `${begin};${timeoutSql.inside}` : begin).catch(() => undefined);
    }

    // node-postgres (a private method): records the active query's statement as prepared on any
    // ParseComplete; a batch has several.
    protected _handleParseComplete(): void {
      const query = (this as unknown as { _getActiveQuery(): unknown })._getActiveQuery();
      if (query instanceof GuardedQuery && !query.parseCompleted(this.connection as unknown as Connection)) return;
      (pg.Client.prototype as unknown as { _handleParseComplete(this: pg.Client): void })._handleParseComplete.call(this);
    }
  };
}
