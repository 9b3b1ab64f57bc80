import { Client } from 'pg';
import { consoleCookie } from './support/console';
import { startTestApp, TestApp } from './support/test-app';

jest.setTimeout(600_000);

const ORGANISATIONS = 100_000;
const LEDGER_ROWS = 1_000_000;
const TYPES = ['customer.subscription.created', 'customer.subscription.updated', 'customer.subscription.deleted', 'invoice.payment_succeeded'];

/**
 * The operator console at spec §14's scale: 100,000 organisations (each with an owner, a subscription for a
 * third of them, a notification and an audit entry) and 1,000,000 webhook events over 30 days, seeded by SQL.
 * Every page is asked three times and its server time printed (the best of the three): the figures go to
 * docs/performance.md. No assertion on time (a shared machine); each page must answer 200 with its rows.
 */
describe('console pages at scale', () => {
  let t: TestApp;
  let cookie: string;

  beforeAll(async () => {
    t = await startTestApp();
    // Its own connection: the app's pool has the service's statement time limit.
    const seed = new Client({ connectionString: t.databaseUrl });
    await seed.connect();
    await seed.query(
      `INSERT INTO organisations (id, name, external_id, provider_customer_id, created_at)
       SELECT md5('org' || i)::uuid, 'Scale Org ' || lpad(i::text, 6, '0'), 'ext-' || i, 'cus_scale_' || i, now() - i * interval '1 minute'
       FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO users (id, email) SELECT md5('user' || i)::uuid, 'owner' || i || '@scale.example' FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO memberships (organisation_id, user_id, role) SELECT md5('org' || i)::uuid, md5('user' || i)::uuid, 'owner' FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO provider_subscriptions (subscription_id, organisation_id, customer_id, tier, status, current_period_start, current_period_end, last_event_created)
       SELECT 'sub_scale_' || i, md5('org' || i)::uuid, 'cus_scale_' || i, (ARRAY['pro', 'team', 'enterprise'])[1 + i % 3],
              (ARRAY['active', 'active', 'active', 'trialing', 'past_due', 'canceled'])[1 + i % 6],
              extract(epoch FROM now())::bigint - 86400, extract(epoch FROM now())::bigint + 29 * 86400, extract(epoch FROM now())::bigint
       FROM generate_series(1, $1, 3) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO webhook_events (id, type, created, payload, status, reason, organisation_id, customer_id, subscription_id, received_at, last_received_at, processed_at)
       SELECT 'evt_scale_' || i, $2::text[] ARRAY_SLICE, extract(epoch FROM now())::bigint - i * 2, '{"id":"evt_scale_' || i || '","object":"event"}',
              s.status, CASE WHEN s.status = 'failed' THEN 'tier_unresolvable: scale' END,
              CASE WHEN s.status = 'unmatched' THEN NULL ELSE md5('org' || (1 + i % $3))::uuid END,
              'cus_scale_' || (1 + i % $3), 'sub_scale_' || (1 + i % $3),
              now() - i * interval '2.592 seconds', now() - i * interval '2.592 seconds', now() - i * interval '2.592 seconds'
       FROM generate_series(1, $1) AS i,
            LATERAL (SELECT CASE WHEN i % 100 = 0 THEN 'failed' WHEN i % 100 = 1 THEN 'unmatched' WHEN i % 100 = 2 THEN 'duplicate' ELSE 'processed' END AS status) AS s`
        .replace('$2::text[] ARRAY_SLICE', `($2::text[])[1 + i % ${TYPES.length}]`),
      [LEDGER_ROWS, TYPES, ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO notification_messages (id, organisation_id, type, version, body)
       SELECT 'msg_scale_' || i, md5('org' || i)::uuid, 'license.updated', 1, '{}' FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO notification_deliveries (message_id, url, status, attempts, next_attempt_at, last_error)
       SELECT 'msg_scale_' || i, 'http://127.0.0.1:9/hooks', CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'delivered' END, 1, NULL,
              CASE WHEN i % 50 = 0 THEN 'HTTP 503' END
       FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query(
      `INSERT INTO audit_log (actor, action, organisation_id, after)
       SELECT 'service_key:webapp', 'member.added', md5('org' || i)::uuid, '{"role":"owner"}' FROM generate_series(1, $1) AS i`,
      [ORGANISATIONS],
    );
    await seed.query('ANALYZE');
    await seed.end();
    cookie = await consoleCookie(t);
  });
  afterAll(() => t.close());

  it('answers every page; prints each page’s server time', async () => {
    const [{ id: someOrg }] = await t.db.query(`SELECT md5('org' || 4242)::uuid AS id`);
    const [{ id: someAudit }] = await t.db.query(`SELECT id::text AS id FROM audit_log WHERE organisation_id = $1`, [someOrg]);
    const pages: [string, string][] = [
      ['overview', '/console'],
      ['organisations, first page', '/console/organisations'],
      ['organisations, part of a name', '/console/organisations?q=Org%2004242'],
      ['organisations, member email', '/console/organisations?q=owner4242%40scale.example'],
      ['organisations, part of an email', '/console/organisations?q=owner4242%40scale'],
      ['organisations, part of an email in every one', '/console/organisations?q=%40scale.exam'],
      ['organisations, two letters (exact look-ups only)', '/console/organisations?q=zq'],
      ['organisations, part of 1 % of the emails', '/console/organisations?q=owner99'],
      ['organisations, customer id', '/console/organisations?q=cus_scale_4242'],
      ['organisations, subscription id', '/console/organisations?q=sub_scale_4243'],
      ['organisations, no match', '/console/organisations?q=nothing%20like%20this'],
      ['one organisation', `/console/organisations/${someOrg}`],
      ['webhook events', '/console/events'],
      ['webhook events, failed', '/console/events?status=failed'],
      ['webhook events, one type', `/console/events?type=${TYPES[3]}`],
      ['webhook events, a day 20 days ago', `/console/events?from=${day(-20)}&to=${day(-20)}`],
      ['webhook events, an organisation', `/console/events?organisation_id=${someOrg}`],
      ['one webhook event', '/console/events/evt_scale_500000'],
      ['notifications, failed', '/console/notifications?status=failed'],
      ['notifications, all', '/console/notifications'],
      ['reconciliation', '/console/reconciliation'],
      ['audit log', '/console/audit'],
      ['one audit entry', `/console/audit/${someAudit}`],
    ];
    const rows: string[] = [];
    for (const [name, path] of pages) {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const started = process.hrtime.bigint();
        const res = await t.http().get(path).set('Cookie', cookie);
        best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e6);
        expect([name, res.status]).toEqual([name, 200]);
      }
      rows.push(`| ${name} | \`${path.replace(someOrg, '{id}').replace(/\/audit\/\d+$/, '/audit/{id}')}\` | ${best.toFixed(0)} |`);
    }
    // The first organisations page holds 50 rows and a next page; a member's email finds its organisation.
    const first = await t.http().get('/console/organisations').set('Cookie', cookie);
    expect(first.text.match(/href="\/console\/organisations\/[0-9a-f-]{36}"/g)).toHaveLength(50);
    expect((await t.http().get('/console/organisations?q=owner4242%40scale.example').set('Cookie', cookie)).text).toContain(someOrg);
    // Part of one finds it too, saying which member matched.
    const partial = (await t.http().get('/console/organisations?q=OWNER4242%40scale').set('Cookie', cookie)).text;
    expect(partial).toContain(someOrg);
    expect(partial.match(/href="\/console\/organisations\/[0-9a-f-]{36}"/g)).toHaveLength(1);
    expect(partial).toContain('member <span class="nowrap">owner4242@</span><wbr><span class="nowrap">scale.example</span>');
    console.log(`console pages with ${ORGANISATIONS} organisations and ${LEDGER_ROWS} ledger rows (ms, best of 3):\n${rows.join('\n')}`);
  });
});

function day(offset: number): string {
  return new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
}
