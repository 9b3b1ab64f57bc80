import { cli } from './support/run-cli';
import { createOrganisation, createUserWithSession, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { freePort } from './support/free-port';

/** `webhook:trigger` against a running service (the CLI's command line in-process; cli.e2e-spec.ts spawns it). */
describe('webhook:trigger', () => {
  let t: TestApp;
  let url: string;
  const env = { PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };

  beforeAll(async () => {
    t = await startTestApp();
    url = `${t.baseUrl}/api/webhooks/payprovider`;
  });
  afterAll(() => t.close());

  it('drives an organisation through created → invoice → updated → deleted with signed events', async () => {
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const license = async () =>
      (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.license;
    const trigger = (type: string, ...flags: string[]) => cli(['webhook:trigger', type, '--org', orgId, '--url', url, ...flags], env);

    const created = await trigger('customer.subscription.created', '--tier', 'team');
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect(created.json).toEqual({ id: expect.stringMatching(/^evt_/), type: 'customer.subscription.created', status: 200, response: expect.anything() });
    expect(await license()).toEqual({ tier: 'team', is_active: true, is_expired: false });

    expect((await trigger('invoice.payment_succeeded', '--tier', 'team')).code).toBe(0);
    const history = await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    expect(history.body.data).toEqual([expect.objectContaining({ amount_paid: 9900, currency: 'EUR' })]);

    expect((await trigger('customer.subscription.updated', '--tier', 'enterprise')).code).toBe(0);
    expect(await license()).toMatchObject({ tier: 'enterprise' });
    expect((await trigger('customer.subscription.deleted')).code).toBe(0);
    expect(await license()).toEqual({ tier: 'free', is_active: true, is_expired: false });

    const ledger = await t.db.query(`SELECT type, status FROM webhook_events WHERE organisation_id = $1 ORDER BY received_at`, [orgId]);
    expect(ledger.map((e: { status: string }) => e.status)).toEqual(['processed', 'processed', 'processed', 'processed']);
  });

  it('exits non-zero with the answer when the service refuses the event (wrong secret), changing nothing', async () => {
    const orgId = (await createOrganisation(t)).id;
    const before = (await t.db.query(`SELECT count(*)::int AS n FROM webhook_events`))[0].n;
    const res = await cli(['webhook:trigger', 'customer.subscription.created', '--org', orgId, '--url', url], {
      PAYPROVIDER_WEBHOOK_SECRET: 'whsec_not_the_service_secret',
    });
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/refused the event: .*"status":400/);
    expect((await t.db.query(`SELECT count(*)::int AS n FROM webhook_events`))[0].n).toBe(before);
  });

  it('exits non-zero when nothing listens at the URL', async () => {
    const port = await freePort();
    const res = await cli(
      ['webhook:trigger', 'invoice.payment_succeeded', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', '--url', `http://127.0.0.1:${port}/api/webhooks/payprovider`],
      env,
    );
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/could not reach http:\/\/127\.0\.0\.1:\d+\/api\/webhooks\/payprovider: .*ECONNREFUSED/);
  });

  it.each([
    [['webhook:trigger'], /event type must be one of/],
    [['webhook:trigger', 'charge.refunded', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11'], /event type must be one of/],
    [['webhook:trigger', 'customer.subscription.created'], /--org is required/],
    [['webhook:trigger', 'customer.subscription.created', '--org', 'acme'], /--org must be a UUID/],
    [['webhook:trigger', 'customer.subscription.created', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', '--tier', 'free'], /--tier must be a paid tier/],
    [['webhook:trigger', 'customer.subscription.created', '--org', '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11', '--url', 'ftp://x'], /--url must be/],
  ])('%j is a usage error (exit 2), nothing sent', async (args, message) => {
    const res = await cli(args, env);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message);
  });
});
