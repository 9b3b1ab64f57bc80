import { Client } from 'pg';
import { MIGRATION_LOCK } from '../../src/database/migrate';
import { transaction } from '../../src/database/transaction';
import { createTestDatabase, migrationLockWaiters } from '../support/databases';
import { activePgBouncer, throughPgBouncer } from '../support/pgbouncer';
import { TEARDOWN_TIMEOUT_MS } from '../support/cleanup';
import { PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer, START_TIMEOUT_MS, waitFor } from '../support/server-process';
import { newNotifySecret, startReceiver } from '../support/notification-receiver';
import { subscriptionEvent, subscriptionObject } from '../support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from '../support/test-app';
import { deliver } from '../support/webhook-signing';

throughPgBouncer();

describe('behind PgBouncer in transaction mode', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  }, TEARDOWN_TIMEOUT_MS);

  it('the test PgBouncer is strict: a named statement or a session setting does not survive its transaction', async () => {
    const client = new Client({ connectionString: activePgBouncer()!.urlFor(t.databaseUrl) });
    await client.connect();
    try {
      const named = { name: 'probe', text: 'SELECT $1::int AS n', values: [1] };
      await client.query(named);
      await expect(client.query(named)).rejects.toMatchObject({ code: '26000' }); // prepared statement does not exist
      await client.query(`SET statement_timeout = 1234`);
      expect((await client.query('SHOW statement_timeout')).rows[0].statement_timeout).toBe('0');
    } finally {
      await client.end();
    }
  });

  it('the test PgBouncer is one as its operators leave it: it refuses a startup parameter but extra_float_digits', async () => {
    const url = activePgBouncer()!.urlFor(t.databaseUrl);
    for (const parameter of [{ statement_timeout: 1000 }, { options: '-c statement_timeout=0' }]) {
      const client = new Client({ connectionString: url, ...parameter });
      await expect(client.connect()).rejects.toThrow(/unsupported startup parameter/);
    }
    // application_name is PgBouncer's own, not a parameter it passes on: the app names its connections.
    const named = new Client({ connectionString: url, application_name: 'probe' });
    await named.connect();
    await named.end();
  });

  it('the service starts behind it and sends no startup parameter: every statement still has its time limit', async () => {
    // startTestApp went through this pooler; its transactions set the limit, and the role's default (set
    // here by the spec files that need it, as the operator would) covers the rest.
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org });
    await t.http().get(`/api/licensing/status?organisation_id=${org}`).set(user.auth).expect(200);
    expect(await transaction(t.db, (m) => m.query('SHOW statement_timeout'))).toEqual([{ statement_timeout: `${t.config.databaseStatementTimeoutMs / 1000}s` }]);
  });

  it('statements are unnamed by default once DATABASE_DIRECT_URL is another URL; named ones would fail here', async () => {
    expect(t.config.databaseDirectUrl).toBe(t.databaseUrl);
    expect(t.config.databaseUrl).not.toBe(t.databaseUrl);
    expect(t.config.databaseNamedStatements).toBe(false);

    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org });
    const status = (app: TestApp) => app.http().get(`/api/licensing/status?organisation_id=${org}`).set(user.auth);
    for (let i = 0; i < 5; i++) await status(t).expect(200);

    // The same app told that the pooler keeps named statements (it does not): the repeated read fails.
    const named = await startTestApp({ databaseUrl: t.databaseUrl, env: { DATABASE_NAMED_STATEMENTS: 'true', DATABASE_POOL_SIZE: '1' } });
    try {
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await status(named)).status);
      expect(codes).toContain(500);
    } finally {
      await named.close();
    }
  });

  it("without the operator's statement_timeout on the role: transactions still get the limit, the start says what is missing", async () => {
    const logLines: string[] = [];
    const app = await startTestApp({ logLines, env: { DATABASE_STATEMENT_TIMEOUT_MS: '1500' } });
    try {
      // No startup parameter went through the pooler: a statement on its own has the server's default...
      expect(await app.db.query('SHOW statement_timeout')).toEqual([{ statement_timeout: '0' }]);
      // ...a transaction sets its own.
      expect(await transaction(app.db, (m) => m.query('SHOW statement_timeout'))).toEqual([{ statement_timeout: '1500ms' }]);
      expect(logLines.join('\n')).toMatch(/ALTER ROLE \S+ SET statement_timeout = 1500/);
    } finally {
      await app.close();
    }
  });
});

describe('notifications behind PgBouncer', () => {
  // The full notifications spec runs on a direct connection; here, what the pooler could break: the
  // decision, outbox and job written through it (unnamed statements, one transaction), the worker on its
  // own session over DATABASE_DIRECT_URL (LISTEN), and the delivery recorded through the pooler again.
  it('a license change is written through the pooler and delivered by the worker on the direct URL', async () => {
    const secret = newNotifySecret();
    const receiver = await startReceiver(secret);
    const t = await startTestApp({ env: { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret } });
    try {
      const org = (await createOrganisation(t)).id;
      await deliver(t.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org }))).expect(200);
      const [message] = await waitFor('the message', () => receiver.accepted(org).length > 0 && receiver.accepted(org));
      expect(message.json.data).toMatchObject({ organisation_id: org, tier: 'pro', is_active: true, version: 1 });
      await waitFor('the delivery recorded', async () => {
        const [row] = await t.db.query(`SELECT status FROM notification_deliveries d JOIN notification_messages m ON m.id = d.message_id WHERE m.organisation_id = $1`, [org]);
        return row?.status === 'delivered';
      });
    } finally {
      await t.close();
      await receiver.close();
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});

describe('migrations behind PgBouncer', () => {
  it('run over DATABASE_DIRECT_URL, whose session holds (and waits for) the migration lock', async () => {
    const database = await createTestDatabase();
    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    let server: ServerProcess | undefined;
    try {
      server = await spawnServer({
        DATABASE_URL: activePgBouncer()!.urlFor(database.url),
        // Only the direct URL names this application: the waiting session shows which URL it came through.
        DATABASE_DIRECT_URL: `${database.url}?application_name=via-direct-url`,
        PAYPROVIDER_WEBHOOK_SECRET: 'whsec_pooler_test',
      });
      const waiters = await waitFor('the start to wait for the lock', async () => {
        const names = await migrationLockWaiters(locker);
        return names.length ? names : undefined;
      }, START_TIMEOUT_MS); // a wait, not a measure: the process loads its modules first (over 20 s under load)
      expect(waiters).toEqual(['via-direct-url']);
      await locker.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      await server.healthy();
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    } finally {
      await server?.stop();
      await locker.end();
      await database.drop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
