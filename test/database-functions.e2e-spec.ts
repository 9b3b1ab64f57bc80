import * as pg from 'pg';
import { BILLING_FUNCTIONS } from '../src/billing/meters/meters.functions';
import { CREDITS_FUNCTIONS } from '../src/credits/credits.functions';
import { DatabaseFunction } from '../src/database/database-function';
import { IDENTITY_FUNCTIONS } from '../src/identity/identity.functions';
import { LICENSING_FUNCTIONS } from '../src/licensing/license-state';
import { DELIVERY_TASK } from '../src/notifications/notification-deliveries.repository';
import { NOTIFICATIONS_FUNCTIONS } from '../src/notifications/notifications.functions';
import { SUBSCRIPTIONS_FUNCTIONS } from '../src/subscriptions/subscriptions.functions';
import { WEBHOOK_FUNCTIONS } from '../src/webhook/webhook.functions';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-functions';
const DECLARED: DatabaseFunction[] = [
  ...IDENTITY_FUNCTIONS,
  ...SUBSCRIPTIONS_FUNCTIONS,
  ...LICENSING_FUNCTIONS,
  ...NOTIFICATIONS_FUNCTIONS,
  ...BILLING_FUNCTIONS,
  ...WEBHOOK_FUNCTIONS,
  ...CREDITS_FUNCTIONS,
];
const SCHEMAS = [...new Set(DECLARED.map((f) => f.name.split('.')[0]))];
const INLINED = new Set(DECLARED.filter((f) => f.inlined).map((f) => f.name));

interface Statement {
  text: string;
  values: unknown[];
}

/** Every statement the app sends while `work` runs (as pg sends them). */
async function statementsOf(work: () => Promise<unknown>): Promise<Statement[]> {
  const capture = jest.spyOn(pg.Client.prototype, 'query');
  let calls: [{ text?: unknown; values?: unknown[] }][];
  try {
    await work();
  } finally {
    calls = [...capture.mock.calls] as unknown as typeof calls;
    capture.mockRestore();
  }
  return calls
    .map(([query]) => ({ text: query?.text, values: query?.values ?? [] }))
    .filter((s): s is Statement => typeof s.text === 'string' && !/^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK|SHOW)\b/i.test(s.text));
}

/**
 * The modules' database functions are the ones the code expects (each module declares its own next to the code
 * that reads them), and the reads among them are inlined: the hot statements that call them by name are planned
 * as one statement, with no function left to call at run time.
 */
describe('the modules’ database functions', () => {
  let t: TestApp;
  let admin: pg.Client;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
    admin = new pg.Client({ connectionString: t.databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await t.close();
  });

  it('every declared function is in the database as declared, and the database has no other in the modules’ schemas', async () => {
    const { rows } = await admin.query(
      `SELECT n.nspname || '.' || p.proname AS name, pg_get_function_identity_arguments(p.oid) AS arguments,
              pg_get_function_result(p.oid) AS returns, l.lanname, p.provolatile, p.proisstrict, p.proconfig, p.prosecdef, p.proretset
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
       WHERE n.nspname = ANY($1) ORDER BY 1`,
      [SCHEMAS],
    );
    expect(rows.map((r) => r.name)).toEqual(DECLARED.map((f) => f.name).sort());
    for (const declared of DECLARED) {
      const found = rows.find((r) => r.name === declared.name);
      expect({ name: declared.name, arguments: found.arguments, returns: found.returns }).toEqual({
        name: declared.name,
        arguments: declared.arguments,
        returns: declared.returns,
      });
      if (declared.inlined) {
        // What PostgreSQL needs to inline a function into its caller.
        expect({ name: declared.name, lanname: found.lanname, volatile: found.provolatile === 'v', strict: found.proisstrict, config: found.proconfig, definer: found.prosecdef }).toEqual({
          name: declared.name,
          lanname: 'sql',
          volatile: false,
          strict: false,
          config: null,
          definer: false,
        });
      }
    }
  });

  it('the outbox writes add jobs of the task the worker runs', async () => {
    const { rows } = await admin.query(`SELECT prosrc FROM pg_proc WHERE oid = 'notifications.enqueue'::regproc`);
    expect(rows[0].prosrc).toContain(`graphile_worker.add_job('${DELIVERY_TASK}'`);
    expect(rows[0].prosrc).toContain(`'${DELIVERY_TASK}:' || d.id`);
  });

  it('the hot reads and writes call the license and the access check inlined: no read of a module is left in their plans', async () => {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org, role: 'owner' });
    const statements = await statementsOf(async () => {
      await t.http().get(`/api/licensing/status?organisation_id=${org}`).set(user.auth).expect(200);
      await t.http().get(`/api/licensing/entitlements?organisation_id=${org}`).set(user.auth).expect(200);
      await t.http().get(`/api/licensing/entitlements?organisation_id=${org}`).set('X-Service-Key', KEY).expect(200);
      await t.http().get(`/api/licensing/check?organisation_id=${org}&metric=projects&amount=1`).set('X-Service-Key', KEY).expect(200);
      await t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
      await t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount: 5, idempotency_key: 'k1' }).expect(200);
      await t.http().get('/api/me').set(user.auth).expect(200);
    });
    const calling = [...new Map(statements.filter((s) => /\blicensing\.license_state\(/.test(s.text)).map((s) => [s.text, s])).values()];
    // status, entitlements, check, usage without and with a key, /api/me
    expect(calling.length).toBeGreaterThanOrEqual(6);
    const left: string[] = [];
    await admin.query('BEGIN');
    try {
      for (const [i, statement] of calling.entries()) {
        await admin.query(`PREPARE hot${i} AS ${statement.text}`);
        for (const mode of ['force_generic_plan', 'force_custom_plan']) {
          await admin.query(`SET LOCAL plan_cache_mode = ${mode}`);
          const args = statement.values.map((v) => (v === null ? 'NULL' : Buffer.isBuffer(v) ? `'\\x${v.toString('hex')}'` : Array.isArray(v) ? admin.escapeLiteral(`{${v.map((e) => (e === null ? 'NULL' : `"${e}"`)).join(',')}}`) : admin.escapeLiteral(String(v))));
          const { rows } = await admin.query(`EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE hot${i}${args.length ? `(${args.join(', ')})` : ''}`);
          const plan = JSON.stringify(rows[0]['QUERY PLAN']);
          // The reads must be inlined; the writes a statement hands on (and credits.room, the usage write's fresh read
          // under the counter's lock) are called by design.
          const calls = (plan.match(new RegExp(`\\b(${SCHEMAS.join('|')})\\.\\w+\\(`, 'g')) ?? []).filter((call) => INLINED.has(call.slice(0, -1)));
          if (calls.length) left.push(`${[...new Set(calls)].join(', ')} ← ${statement.text.replace(/\s+/g, ' ').slice(0, 120)}`);
        }
      }
    } finally {
      await admin.query('ROLLBACK');
      await admin.query('DEALLOCATE ALL');
    }
    expect(left).toEqual([]);
  });
});
