import * as pg from 'pg';
import { AppConfig } from '../src/config/app-config';
import { licenseArguments } from '../src/config/tiers';
import { invoiceObject, invoicePaidEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { giveCredits, creditsTiersFile } from './support/credits';
import { requestStatements, Statement } from './support/statements';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'svc-key-plans';

/** A value as an SQL literal of the text pg would send for it. */
function literal(client: pg.Client, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (Buffer.isBuffer(value)) return `'\\x${value.toString('hex')}'`;
  if (Array.isArray(value)) return client.escapeLiteral(`{${value.map((e) => (e === null ? 'NULL' : `"${String(e).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`);
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (typeof value === 'object') return client.escapeLiteral(JSON.stringify(value));
  return client.escapeLiteral(String(value));
}

/** Every node of a plan (EXPLAIN's JSON), the plan first. */
function nodesOf(plan: any): any[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/**
 * The plans PostgreSQL makes for a statement, prepared as the service prepares it, in a transaction rolled back:
 * one per plan_cache_mode given, under `settings` (SET LOCAL); with `analyze`, executed.
 */
async function plansOf(admin: pg.Client, statement: Statement, { modes, settings = [], analyze = false }: { modes: string[]; settings?: string[]; analyze?: boolean }): Promise<any[]> {
  const plans: any[] = [];
  await admin.query('BEGIN');
  try {
    for (const setting of settings) await admin.query(`SET LOCAL ${setting}`);
    await admin.query(`PREPARE hot AS ${statement.text}`);
    const args = statement.values.length ? `(${statement.values.map((v) => literal(admin, v)).join(', ')})` : '';
    for (const mode of modes) {
      await admin.query(`SET LOCAL plan_cache_mode = ${mode}`);
      const { rows } = await admin.query(`EXPLAIN (${analyze ? 'ANALYZE, ' : ''}FORMAT JSON) EXECUTE hot${args}`);
      plans.push(rows[0]['QUERY PLAN'][0].Plan);
    }
  } finally {
    await admin.query('ROLLBACK');
    await admin.query('DEALLOCATE ALL');
  }
  return plans;
}

/**
 * The plans of the hot statements use index paths. Sequential scans are disabled (`enable_seqscan = off`):
 * the planner then still picks one only where no index can serve, so a tiny test database tells the same
 * as a big one. Both the generic plan (what a named statement settles on) and a custom one are checked.
 * `npm run bench` with BENCH_SCALE=1 measures the same statements on a million organisations.
 */
describe('hot statements use index paths', () => {
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

  /** Tables the generic and a custom plan read with a sequential scan, with sequential scans disabled. */
  async function explain(statement: Statement): Promise<string[]> {
    const plans = await plansOf(admin, statement, { modes: ['force_generic_plan', 'force_custom_plan'], settings: ['enable_seqscan = off'] });
    return [...new Set(plans.flatMap(nodesOf).filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']))];
  }

  it('the check itself: a statement no index serves is caught', async () => {
    expect(await explain({ text: 'SELECT id FROM webhook_events WHERE lower(type) = $1', values: ['invoice.paid'] })).toEqual(['webhook_events']);
  });

  it.each([
    ['the status read', 'status'],
    ['the entitlements read, for a session and a service key', 'entitlements'],
    ['the session lookup (GET /api/me)', 'me'],
    ['a usage write, without and with an idempotency key', 'usage'],
    ['the webhook: ledger claim and effects of subscription and invoice events', 'webhook'],
  ])('%s', async (_label, path) => {
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org, role: 'owner' });
    const sub = subscriptionObject({ organisationId: org, tier: 'pro' });
    const paths: Record<string, () => Promise<unknown>> = {
      status: () => t.http().get(`/api/licensing/status?organisation_id=${org}`).set(user.auth).expect(200),
      entitlements: async () => {
        await t.http().get(`/api/licensing/entitlements?organisation_id=${org}`).set(user.auth).expect(200);
        await t.http().get(`/api/licensing/entitlements?organisation_id=${org}`).set('X-Service-Key', KEY).expect(200);
      },
      me: () => t.http().get('/api/me').set(user.auth).expect(200),
      usage: async () => {
        const report = (body: object) => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body).expect(200);
        await report({ organisation_id: org, metric: 'projects', amount: 1 });
        await report({ organisation_id: org, metric: 'ai_tokens', amount: 10, idempotency_key: 'job-1' });
        await report({ organisation_id: org, metric: 'ai_tokens', amount: 10, idempotency_key: 'job-1' });
      },
      webhook: async () => {
        const server = t.app.getHttpServer();
        // An invoice before its subscription (unmatched), then the subscription that links it, then more.
        const early = invoicePaidEvent(invoiceObject({ subscription: sub.id, customer: sub.customer }));
        for (const event of [
          early,
          subscriptionEvent('created', sub, { created: 100 }),
          subscriptionEvent('updated', { ...sub, status: 'past_due' }, { created: 200 }),
          invoicePaidEvent(invoiceObject({ organisationId: org, subscription: sub.id, customer: sub.customer })),
          subscriptionEvent('deleted', sub, { created: 300 }),
        ]) {
          expect((await deliver(server, event)).status).toBe(200);
        }
        expect((await deliver(server, early)).status).toBe(200); // a duplicate
      },
    };
    const statements = await requestStatements(t.app.getHttpServer(), paths[path]);
    expect(statements.length).toBeGreaterThan(0);
    if (process.env.SHOW_PLANS) console.log(path, [...new Set(statements.map((st) => st.text.replace(/\s+/g, ' ').slice(0, 160)))]);
    const offenders: string[] = [];
    for (const statement of new Map(statements.map((s) => [s.text, s])).values()) {
      const scans = await explain(statement);
      if (scans.length) offenders.push(`${scans.join(', ')} ← ${statement.text.replace(/\s+/g, ' ').slice(0, 300)}`);
    }
    expect(offenders).toEqual([]);
  });

  it('the reads, the check and the usage write carry the tier table in their text, not as a value sent with each call', async () => {
    // As a value PostgreSQL parses it at every call (~12 % of a status read's database CPU, docs/performance.md).
    const { tiers } = licenseArguments(t.app.get(AppConfig));
    const org = (await createOrganisation(t)).id;
    const user = await createUserWithSession(t, { org, role: 'owner' });
    const statements = await requestStatements(t.app.getHttpServer(), async () => {
      await t.http().get(`/api/licensing/status?organisation_id=${org}`).set(user.auth).expect(200);
      await t.http().get(`/api/licensing/entitlements?organisation_id=${org}`).set(user.auth).expect(200);
      await t.http().get(`/api/licensing/check?organisation_id=${org}&metric=projects&amount=1`).set('X-Service-Key', KEY).expect(200);
      await t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'projects', amount: 1 }).expect(200);
    });
    expect(statements.filter((st) => /licensing\.license_state/.test(st.text))).toHaveLength(4);
    expect(statements.filter((st) => st.values.includes(tiers)).map((st) => st.text.replace(/\s+/g, ' ').slice(0, 120))).toEqual([]);
  });
});

/** The tables the usage write reads that grow with use (one row per period, key, hold, grant or consumption). */
const GROWING = ['usage_counters', 'usage_idempotency_keys', 'usage_reservations', 'credit_grants', 'credit_ledger'];

/**
 * The usage write as its tables grow: what it plans while they are nearly empty, and what it leaves behind in them.
 * Here sequential scans are allowed, as they are in the service.
 */
describe('the usage write as its tables grow', () => {
  let t: TestApp;
  let admin: pg.Client;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() } });
    admin = new pg.Client({ connectionString: t.databaseUrl });
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await t.close();
  });

  /** The growing tables a statement's generic plan scans whole when it runs. */
  async function scansRun(statement: Statement): Promise<string[]> {
    const [plan] = await plansOf(admin, statement, { modes: ['force_generic_plan'], analyze: true });
    return nodesOf(plan)
      .filter((n) => n['Node Type'] === 'Seq Scan' && n['Actual Loops'] > 0 && GROWING.includes(n['Relation Name']))
      .map((n) => n['Relation Name']);
  }

  // Its plans as a connection makes them on a new database: the tables nearly empty and never analysed (this
  // machine's PostgreSQL runs without autovacuum, so they never are). The connection keeps that plan as the tables
  // grow, so the plan must read none of them whole: executed (EXPLAIN ANALYZE, rolled back), no sequential scan of a
  // growing table runs.
  it('planned on nearly empty tables, a hold, a commit and a report with a key read no growing table whole', async () => {
    const org = (await createOrganisation(t)).id;
    await giveCredits(t, org, 1000);
    const service = (path: string, body: object) => t.http().post(path).set('X-Service-Key', KEY).send(body);
    const hold = () => service('/api/licensing/usage/reservations', { organisation_id: org, metric: 'ai_tokens', amount: 10 }).expect(201);
    const server = t.app.getHttpServer();
    let first = '';
    const [holding] = await requestStatements(server, async () => (first = (await hold()).body.id));
    const [committing] = await requestStatements(server, () => service(`/api/licensing/usage/reservations/${first}/commit`, { amount: 7 }).expect(200));
    const [reporting] = await requestStatements(server, () => service('/api/licensing/usage', { organisation_id: org, metric: 'ai_tokens', amount: 150, idempotency_key: 'job-1' }).expect(200));
    // The commit's statement again, for a hold still held (the first is committed now).
    const second = (await hold()).body.id;
    const committingHeld = { ...committing, values: committing.values.map((v) => (Array.isArray(v) && v[0] === first ? [second] : v)) };
    expect(committingHeld.values).toContainEqual([second]);
    for (const statement of [holding, committingHeld, reporting]) expect(await scansRun(statement)).toEqual([]);
  });

  // What every report rewrites, a counter and the grants it draws on, is updated in place (a HOT update: the new
  // version on the same page, no new index entry), so that those rows' old versions never pile up in the indexes
  // the next report reads, vacuum or not (docs/performance.md). A report's statement, run again in a transaction
  // rolled back, and PostgreSQL's own count of that transaction's updates of each table.
  it('a report drawing on a grant rewrites its counter and the grant on their pages', async () => {
    const org = (await createOrganisation(t)).id;
    await giveCredits(t, org, 1000);
    const report = () => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount: 150 }).expect(200);
    await report(); // past the 100 included: 50 drawn from the grant
    const [reporting] = await requestStatements(t.app.getHttpServer(), report);
    await admin.query('BEGIN');
    try {
      const [remaining, before] = [await grantRemaining(org), await updates()];
      await admin.query(reporting.text, reporting.values);
      expect(await grantRemaining(org)).toBe(remaining - 150);
      const after = await updates();
      expect(after.map((a, i) => ({ relname: a.relname, updated: a.updated - before[i].updated, hot: a.hot - before[i].hot }))).toEqual([
        { relname: 'credit_grants', updated: 1, hot: 1 },
        { relname: 'usage_counters', updated: 1, hot: 1 },
      ]);
    } finally {
      await admin.query('ROLLBACK');
    }
  });

  /**
   * The updates of both tables this connection counted and has not yet reported (which it does only when idle out of
   * a transaction: the earlier tests' EXPLAIN ANALYZE may have left some), so a statement's are a difference.
   */
  async function updates(): Promise<{ relname: string; updated: number; hot: number }[]> {
    const { rows } = await admin.query(
      `SELECT relname, pg_stat_get_xact_tuples_updated(oid)::int AS updated, pg_stat_get_xact_tuples_hot_updated(oid)::int AS hot
       FROM pg_class WHERE relname IN ('usage_counters', 'credit_grants') ORDER BY relname`,
    );
    return rows;
  }

  async function grantRemaining(org: string): Promise<number> {
    const { rows } = await admin.query('SELECT sum(remaining)::int AS remaining FROM credit_grants WHERE organisation_id = $1', [org]);
    return rows[0].remaining;
  }
});
