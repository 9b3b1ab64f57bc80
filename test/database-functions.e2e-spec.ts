import * as pg from 'pg';
import { BILLING_FUNCTIONS } from '../src/billing/meters/meters.functions';
import { AppConfig } from '../src/config/app-config';
import { licenseArguments } from '../src/config/tiers';
import { CREDITS_FUNCTIONS } from '../src/credits/credits.functions';
import { DatabaseFunction } from '../src/database/database-function';
import { IDENTITY_FUNCTIONS } from '../src/identity/identity.functions';
import { LICENSING_FUNCTIONS } from '../src/licensing/license-state';
import { DELIVERY_TASK } from '../src/notifications/notification-deliveries.repository';
import { NOTIFICATIONS_FUNCTIONS } from '../src/notifications/notifications.functions';
import { SUBSCRIPTIONS_FUNCTIONS } from '../src/subscriptions/subscriptions.functions';
import { WEBHOOK_FUNCTIONS } from '../src/webhook/webhook.functions';
import { requestStatements } from './support/statements';
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
      // Planned once per session with index probes (the usage write's per-statement functions), or as PostgreSQL chooses.
      const planning = (found.proconfig ?? []).filter((c: string) => c.startsWith('plan_cache_mode=') || c.startsWith('enable_seqscan='));
      expect({ name: declared.name, config: declared.inlined ? found.proconfig : planning }).toEqual({
        name: declared.name,
        config: declared.inlined ? null : declared.genericPlans ? ['plan_cache_mode=force_generic_plan', 'enable_seqscan=off'] : [],
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

  it('the license of every organisation at once (licensing.subscribed_licenses) is each organisation’s own (licensing.license_state)', async () => {
    const { tiers, graceS } = licenseArguments(t.app.get(AppConfig));
    const now = Math.floor(Date.now() / 1000);
    const day = 86_400;
    // Each case: the organisation's subscriptions (tier, status, last event's age in days, past due since, days ago;
    // deleted) and the license expected.
    type Sub = { tier: string | null; status: string | null; age: number; pastDue?: number; deleted?: boolean };
    const cases: { name: string; subs: Sub[]; license: [string, boolean, boolean] }[] = [
      { name: 'none', subs: [], license: ['free', true, false] },
      { name: 'active', subs: [{ tier: 'pro', status: 'active', age: 3 }], license: ['pro', true, false] },
      { name: 'trialing', subs: [{ tier: 'team', status: 'trialing', age: 3 }], license: ['team', true, false] },
      { name: 'in grace', subs: [{ tier: 'team', status: 'past_due', age: 2, pastDue: 2 }], license: ['team', true, false] },
      { name: 'past grace', subs: [{ tier: 'team', status: 'past_due', age: 10, pastDue: 10 }], license: ['team', false, true] },
      { name: 'canceled', subs: [{ tier: 'pro', status: 'canceled', age: 1 }], license: ['pro', false, true] },
      { name: 'unpaid', subs: [{ tier: 'pro', status: 'unpaid', age: 1 }], license: ['pro', false, true] },
      {
        name: 'newest past grace, older live',
        subs: [
          { tier: 'pro', status: 'active', age: 40 },
          { tier: 'team', status: 'past_due', age: 10, pastDue: 10 },
        ],
        license: ['pro', true, false],
      },
      {
        name: 'two live: the higher tier',
        subs: [
          { tier: 'enterprise', status: 'active', age: 30 },
          { tier: 'pro', status: 'active', age: 1 },
        ],
        license: ['enterprise', true, false],
      },
      {
        name: 'none live: the higher tier',
        subs: [
          { tier: 'enterprise', status: 'canceled', age: 30 },
          { tier: 'pro', status: 'unpaid', age: 1 },
        ],
        license: ['enterprise', false, true],
      },
      {
        name: 'none live, one tier: the newest',
        subs: [
          { tier: 'pro', status: 'canceled', age: 30 },
          { tier: 'pro', status: 'unpaid', age: 1 },
        ],
        license: ['pro', false, true],
      },
      { name: 'deleted', subs: [{ tier: 'pro', status: 'active', age: 1, deleted: true }], license: ['free', true, false] },
      { name: 'incomplete', subs: [{ tier: 'pro', status: 'incomplete', age: 1 }], license: ['free', true, false] },
      { name: 'no tier', subs: [{ tier: null, status: 'active', age: 1 }], license: ['free', true, false] },
      { name: 'a tier the table no longer lists', subs: [{ tier: 'gold', status: 'active', age: 1 }], license: ['gold', true, false] },
      {
        name: 'a deleted live one beside a canceled one',
        subs: [
          { tier: 'enterprise', status: 'active', age: 1, deleted: true },
          { tier: 'team', status: 'canceled', age: 5 },
        ],
        license: ['team', false, true],
      },
    ];
    const orgs: string[] = [];
    for (const [i, c] of cases.entries()) {
      const org = (await createOrganisation(t, `Licenses ${c.name}`)).id;
      orgs.push(org);
      for (const [j, sub] of c.subs.entries()) {
        await admin.query(
          `INSERT INTO provider_subscriptions (subscription_id, organisation_id, tier, status, current_period_start, current_period_end,
                                               past_due_since, last_event_created, deleted_event_created)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
          [
            `sub_licenses_${i}_${j}`,
            org,
            sub.tier,
            sub.status,
            now - 20 * day,
            now + 10 * day,
            sub.pastDue === undefined ? null : now - sub.pastDue * day,
            now - sub.age * day,
            sub.deleted ? now - sub.age * day : null,
          ],
        );
      }
    }
    const { rows: each } = await admin.query(
      `SELECT o.id, l.tier, l.is_active, l.is_expired, l.subscription_id
       FROM unnest($1::uuid[]) WITH ORDINALITY AS o(id, n) CROSS JOIN LATERAL licensing.license_state(o.id, $2::jsonb, $3::bigint) l ORDER BY o.n`,
      [orgs, tiers, graceS],
    );
    expect(Object.fromEntries(each.map((r, i) => [cases[i].name, [r.tier, r.is_active, r.is_expired]]))).toEqual(
      Object.fromEntries(cases.map((c) => [c.name, c.license])),
    );
    const { rows: all } = await admin.query(`SELECT * FROM licensing.subscribed_licenses($1::jsonb, $2::bigint) WHERE organisation_id = ANY($3::uuid[])`, [
      tiers,
      graceS,
      orgs,
    ]);
    // Every organisation whose license follows a subscription has its license in the set; every other one is free.
    const expected = each.filter((r) => r.subscription_id !== null).map((r) => ({ organisation_id: r.id, tier: r.tier, is_active: r.is_active, is_expired: r.is_expired }));
    expect(expected.length).toBeGreaterThan(8);
    expect(all.sort((a, b) => orgs.indexOf(a.organisation_id) - orgs.indexOf(b.organisation_id))).toEqual(expected);
    // And each organisation's choice (explain's) is the set's, filtered.
    const { rows: choices } = await admin.query(
      `SELECT c.* FROM licensing.subscription_choices($1::jsonb, $2::bigint) c WHERE c.organisation_id = ANY($3::uuid[]) ORDER BY c.subscription_id`,
      [tiers, graceS, orgs],
    );
    const { rows: choice } = await admin.query(
      `SELECT o.id AS organisation_id, c.* FROM unnest($3::uuid[]) AS o(id) CROSS JOIN LATERAL licensing.subscription_choice(o.id, $1::jsonb, $2::bigint) c
       ORDER BY c.subscription_id`,
      [tiers, graceS, orgs],
    );
    expect(choice).toEqual(choices);
    expect(choices.map((c) => c.not_chosen)).toEqual(expect.arrayContaining([null, 'not_live', 'lower_tier', 'older', 'deleted', 'incomplete', 'no_tier']));
  });

  it('the hot reads and writes call the license and the access check inlined: no read of a module is left in their plans', async () => {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org, role: 'owner' });
    const statements = await requestStatements(t.app.getHttpServer(), async () => {
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
