import { Client } from 'pg';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { counters, errorBody } from './licensing-fixtures';
import { createTestDatabase, TestDatabase } from './support/databases';
import { activePgBouncer, operatorsStatementTimeout } from './support/pgbouncer';
import { invoiceObject, invoicePaidEvent } from './support/provider-events';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'svc-key-timeouts';
const LIMIT_MS = 3000;

/**
 * DATABASE_STATEMENT_TIMEOUT_MS: a request that fails because the database was slow has committed
 * nothing. Rows are held locked by another connection; the app's statements wait on them until the
 * server cancels them. test/groups/pgbouncer.e2e-spec.ts runs this file again behind PgBouncer.
 */
describe('the statement timeout: a 5xx because the database was slow has committed nothing', () => {
  let database: TestDatabase;
  let t: TestApp;
  let locker: Client;
  beforeAll(async () => {
    database = await createTestDatabase();
    // Behind PgBouncer, the operator's part: the limit for statements outside a transaction. 3 s, not less: on a
    // loaded machine the first usage statement's planning alone took over 1 s and was cancelled.
    if (activePgBouncer()) await operatorsStatementTimeout(database.name, LIMIT_MS);
    t = await startTestApp({ databaseUrl: database.url, env: { SERVICE_API_KEYS: KEY, DATABASE_STATEMENT_TIMEOUT_MS: String(LIMIT_MS) } });
    locker = new Client({ connectionString: t.databaseUrl });
    locker.on('error', () => undefined);
    await locker.connect();
  });
  afterAll(async () => {
    await locker.end();
    await t.close();
    await database.drop();
  }, TEARDOWN_TIMEOUT_MS);

  const report = (body: object) => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body);

  /** Statements of the app's database that wait for a lock right now. */
  const waiting = async () =>
    (
      await locker.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
      )
    ).rows[0].n as number;

  it('a usage report blocked on its counter row: 503, nothing counted, no key kept; the retry counts once', async () => {
    const org = (await createOrganisation(t)).id;
    await report({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
    const before = await counters(t, org);

    await locker.query('BEGIN');
    await locker.query(`SELECT used FROM usage_counters WHERE organisation_id = $1 AND metric = 'projects' FOR UPDATE`, [org]);
    // With a key: a transaction (key row, then counter). Without: one statement on its own.
    const keyed = await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'job-1' });
    const single = await report({ organisation_id: org, metric: 'projects', amount: 1 });
    for (const res of [keyed, single]) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual(errorBody(503, 'database_timeout'));
    }
    // The server cancelled them: nothing of theirs is still waiting to commit once the lock goes.
    expect(await waiting()).toBe(0);
    await locker.query('COMMIT');

    expect(await counters(t, org)).toEqual(before);
    expect(await t.db.query(`SELECT key FROM usage_idempotency_keys WHERE organisation_id = $1`, [org])).toEqual([]);
    const retry = await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'job-1' }).expect(200);
    expect(retry.body.used).toBe(2);
    const again = await report({ organisation_id: org, metric: 'projects', amount: 1, idempotency_key: 'job-1' }).expect(200);
    expect(again.body).toEqual(retry.body);
    expect((await counters(t, org)).find((c: { metric: string }) => c.metric === 'projects').used).toBe(2);
  });

  it('a webhook blocked on billing history: 503, nothing in the ledger; the redelivery is applied once', async () => {
    const org = (await createOrganisation(t)).id;
    const event = invoicePaidEvent(invoiceObject({ organisationId: org }));

    await locker.query('BEGIN');
    await locker.query('LOCK TABLE billing_history IN EXCLUSIVE MODE');
    const res = await deliver(t.app.getHttpServer(), event);
    expect(res.status).toBe(503);
    expect(await waiting()).toBe(0);
    await locker.query('COMMIT');

    expect(await t.db.query(`SELECT id FROM webhook_events WHERE id = $1`, [event.id])).toEqual([]);
    expect((await deliver(t.app.getHttpServer(), event)).status).toBe(200);
    const rows = await t.db.query(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org]);
    expect(rows[0].n).toBe(1);
  });
});
