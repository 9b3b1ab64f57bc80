import { eventCommands } from '../src/cli/events.commands';
import { providerSyncChanges } from '../src/common/metrics';
import { ProviderSync, SyncSummary } from '../src/webhook/provider-sync';
import { ProviderSyncSchedule } from '../src/webhook/provider-sync.schedule';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { licenseOf } from './support/license-state';
import { invoiceObject, providerEvent, providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const nowS = () => Math.floor(Date.now() / 1000);
const PRICE_PRO = 'price_sync_pro';
const PRICE_TEAM = 'price_sync_team';

/** provider:sync (spec §9): what webhooks missed is pulled from the provider; drift is corrected. */
describe('reconciliation with the provider', () => {
  let fake: FakeProvider;
  let t: TestApp;
  const logLines: string[] = [];
  // The shared provider budget (PAYPROVIDER_MAX_RPS) set above PROVIDER_SYNC_MAX_RPS: the run's own pace is what is tested.
  const env = () => ({ ...fakeProviderEnv(fake, 300), PAYPROVIDER_MAX_RPS: '100', PAYPROVIDER_PRICE_PRO: PRICE_PRO, PAYPROVIDER_PRICE_TEAM: PRICE_TEAM });

  beforeAll(async () => {
    fake = await startFakeProvider({ prices: [PRICE_PRO, PRICE_TEAM] });
    t = await startTestApp({ env: env(), logLines });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  /** `npm run -s cli -- provider:sync --since N`, in-process. */
  const sync = async (app: TestApp = t, since = '30') =>
    (await eventCommands['provider:sync'].run(app.app, { since }, [], app.config)) as SyncSummary;
  const billing = async (org: string) =>
    (await t.db.query(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org]))[0].n;
  const ledgerSources = async (ids: string[]) =>
    (await t.db.query(`SELECT source FROM webhook_events WHERE id = ANY($1) ORDER BY source`, [ids])).map((r: { source: string }) => r.source);
  /** `count` subscriptions we know (each of its own organisation) that the provider does not; their ids. */
  async function knownSubscriptions(count: number): Promise<string[]> {
    const ids = Array.from({ length: count }, () => providerId('sub'));
    await t.db.query(
      `WITH o AS (INSERT INTO organisations (name) SELECT 'Gone' FROM generate_series(1, $2) RETURNING id)
       INSERT INTO provider_subscriptions (subscription_id, organisation_id, tier, status)
       SELECT s, o.id, 'pro', 'active' FROM unnest($1::text[]) WITH ORDINALITY AS x(s, n) JOIN (SELECT id, row_number() OVER () AS n FROM o) o USING (n)`,
      [ids, count],
    );
    return ids;
  }
  /** A subscription of ours, and its events as the provider keeps them; the provider's current state too. */
  function subscriptionWithEvents(org: string, tierPrice = PRICE_PRO) {
    const sub = subscriptionObject({ organisationId: org, tierSource: 'none', price: tierPrice, periodStart: nowS() - 3600 });
    fake.addSubscription(sub);
    const created = subscriptionEvent('created', sub, { created: nowS() - 3000 });
    const invoice = providerEvent('invoice.paid', invoiceObject({ organisationId: org, subscription: sub.id, customer: sub.customer, price: tierPrice }), {
      created: nowS() - 2999,
    });
    for (const e of [created, invoice]) fake.addEvent(e);
    return { sub, created, invoice };
  }

  it('applies the events no webhook delivered, skips the delivered ones, and a second run changes nothing', async () => {
    const org = (await createOrganisation(t)).id;
    const { created, invoice } = subscriptionWithEvents(org);
    // The invoice was delivered; the subscription event was lost.
    await deliver(t.app.getHttpServer(), invoice).expect(200);
    fake.addEvent(providerEvent('charge.succeeded', { id: 'ch_1', object: 'charge' }));
    const before = (await providerSyncChanges.get()).values.find((v) => v.labels.kind === 'event_applied')?.value ?? 0;

    const first = await sync();
    expect(first).toMatchObject({ events_seen: 2, events_applied: 1 });
    expect(first.subscriptions_checked).toBeGreaterThanOrEqual(1);
    expect(await licenseOf(t, org)).toMatchObject({ tier: 'pro', is_active: true });
    expect(await billing(org)).toBe(1);
    expect(await ledgerSources([created.id, invoice.id])).toEqual(['sync', 'webhook']);
    // Only the types the service handles were asked for, from 30 days back, 100 a page.
    const asked = fake.requests.find((r) => r.path === '/v1/events')!;
    expect(asked.query).toMatchObject({ limit: '100', types: expect.arrayContaining(['customer.subscription.created', 'invoice.paid']) });
    expect(Number((asked.query.created as { gte: string }).gte)).toBeGreaterThan(nowS() - 30 * 86_400 - 60);
    expect((await providerSyncChanges.get()).values.find((v) => v.labels.kind === 'event_applied')!.value).toBe(before + 1);

    expect(await sync()).toEqual({ ...first, events_applied: 0, subscriptions_corrected: 0 });
  });

  it('a webhook arriving during a sync for the same event has one effect', async () => {
    const org = (await createOrganisation(t)).id;
    const { invoice } = subscriptionWithEvents(org);
    const [summary, delivered] = await Promise.all([sync(), deliver(t.app.getHttpServer(), invoice)]);
    expect(delivered.status).toBe(200);
    expect(summary.events_seen).toBe(2);
    expect(await billing(org)).toBe(1);
    expect((await t.db.query(`SELECT count(*)::int AS n FROM webhook_events WHERE id = $1`, [invoice.id]))[0].n).toBe(1);
  });

  it('corrects drift: the provider says team, we say pro', async () => {
    const org = (await createOrganisation(t)).id;
    const { sub, created } = subscriptionWithEvents(org);
    await deliver(t.app.getHttpServer(), created).expect(200);
    // A plan switch whose event was lost, and a new period.
    const periodStart = nowS() - 60;
    fake.addSubscription({ ...subscriptionObject({ ...sub, organisationId: org, tierSource: 'none', price: PRICE_TEAM, periodStart }), id: sub.id, customer: sub.customer });
    const summary = await sync();
    expect(summary.subscriptions_corrected).toBe(1);
    expect(await licenseOf(t, org)).toMatchObject({ tier: 'team', is_active: true, current_period_start: periodStart });
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'subscription corrected to what the provider says' && l.subscriptionId === sub.id);
    expect(line).toMatchObject({ before: { tier: 'pro' }, after: { tier: 'team' } });
    // A late event older than the correction cannot undo it.
    await deliver(t.app.getHttpServer(), subscriptionEvent('updated', sub, { created: nowS() - 1000 })).expect(200);
    expect((await licenseOf(t, org)).tier).toBe('team');
    expect((await sync()).subscriptions_corrected).toBe(0);
  });

  it('pages through more than 100 events', async () => {
    const org = (await createOrganisation(t)).id;
    const { created } = subscriptionWithEvents(org);
    for (let i = 0; i < 230; i++) {
      fake.addEvent(providerEvent('invoice.paid', invoiceObject({ organisationId: org, price: PRICE_PRO }), { created: nowS() - 2000 + i }));
    }
    const summary = await sync();
    expect(summary).toMatchObject({ events_seen: 232, events_applied: 232 });
    expect(await billing(org)).toBe(231);
    const pages = fake.requests.filter((r) => r.path === '/v1/events');
    expect(pages).toHaveLength(3);
    expect(pages[1].query.starting_after).toBeDefined();
    expect((await licenseOf(t, org)).subscription_id).toBe(created.data.object.id);
  });

  it('a provider failing mid-run stops it (the CLI exits non-zero) keeping what was applied; the next run does the rest', async () => {
    const org = (await createOrganisation(t)).id;
    const { sub } = subscriptionWithEvents(org);
    // The provider's subscription is on team now; its fetch fails (after the SDK's retries).
    fake.addSubscription({ ...subscriptionObject({ organisationId: org, tierSource: 'none', price: PRICE_TEAM }), id: sub.id, customer: sub.customer });
    fake.failPath('/v1/subscriptions', { status: 503 });
    await expect(sync()).rejects.toThrow();
    expect(await billing(org)).toBe(1);
    expect((await licenseOf(t, org)).tier).toBe('pro');

    fake.failPath('/v1/subscriptions', undefined);
    const next = await sync();
    expect(next).toMatchObject({ events_applied: 0, subscriptions_corrected: 1 });
    expect((await licenseOf(t, org)).tier).toBe('team');
  });

  it('lists subscriptions in every status, canceled too, and fetches alone only the known ones the list lacks', async () => {
    const org = (await createOrganisation(t)).id;
    const { sub, created } = subscriptionWithEvents(org);
    await deliver(t.app.getHttpServer(), created).expect(200);
    // Canceled at the provider with the event lost: only a list with status=all shows it.
    fake.addSubscription({ ...sub, status: 'canceled' });
    const summary = await sync();
    expect(summary.subscriptions_corrected).toBe(1);
    expect((await licenseOf(t, org)).tier).toBe('free');
    const lists = fake.requests.filter((r) => r.path === '/v1/subscriptions');
    expect(lists.map((r) => r.query)).toEqual([{ status: 'all', limit: '100', expand: ['data.schedule'] }]);
    expect(fake.requests.filter((r) => r.path === `/v1/subscriptions/${sub.id}`)).toEqual([]);
  });

  it('leaves what it cannot apply (no tier of ours, unknown to the provider) and still finishes', async () => {
    const org = (await createOrganisation(t)).id;
    const { sub, created } = subscriptionWithEvents(org);
    await deliver(t.app.getHttpServer(), created).expect(200);
    const gone = await knownSubscriptions(1);
    fake.addSubscription({ ...subscriptionObject({ organisationId: org, tierSource: 'none', price: 'price_not_ours' }), id: sub.id, customer: sub.customer });
    const summary = await sync();
    expect(summary).toMatchObject({ subscriptions_corrected: 0 });
    expect((await licenseOf(t, org)).tier).toBe('pro');
    const lines = logLines.map((l) => JSON.parse(l));
    expect(lines.find((l) => l.subscriptionId === sub.id && /no tier of ours/.test(l.msg))).toBeDefined();
    expect(lines.find((l) => l.subscriptionId === gone[0] && /does not know this subscription/.test(l.msg))).toBeDefined();
  });

  it('keeps to PROVIDER_SYNC_MAX_RPS (20) in every second, counted at the provider', async () => {
    // Known here, unknown to the provider: each is fetched alone, a small request the double answers at once.
    await knownSubscriptions(60);
    await sync();
    expect(fake.requests.length).toBeGreaterThan(60);
    expect(fake.busiestSecond()).toBeLessThanOrEqual(20);
  });

  it("waits out a 429's Retry-After before the SDK's retry", async () => {
    fake.failNext(1, { status: 429, code: 'rate_limit', retryAfter: 2 });
    await sync();
    const [limited, retried] = fake.requests;
    expect(limited.path).toBe(retried.path);
    // The SDK alone would retry after 0.5–1 s.
    expect(retried.at - limited.at).toBeGreaterThanOrEqual(1990);
  });

  it('refuses --since beyond the 30 days the provider keeps', async () => {
    await expect(sync(t, '31')).rejects.toThrow(/--since must be a whole number of days from 1 to 30/);
  });

  it('with PROVIDER_SYNC_INTERVAL_S, two instances never run it at once', async () => {
    const a = await startTestApp({ env: { ...env(), PROVIDER_SYNC_INTERVAL_S: '3600' } });
    const b = await startTestApp({ databaseUrl: a.databaseUrl, env: { ...env(), PROVIDER_SYNC_INTERVAL_S: '3600' } });
    try {
      // a's run is held at the provider until both other ticks have been refused (so no timing decides it),
      // then hangs there (300 ms × 3 attempts) and fails, holding the lease throughout.
      fake.failNext(3, 'hang');
      fake.hold('/v1/');
      const first = a.app.get(ProviderSyncSchedule).tick();
      await waitFor('the provider to be asked', () => fake.held() > 0, 2_000);
      expect(await b.app.get(ProviderSyncSchedule).tick()).toBe('skipped');
      expect(await a.app.get(ProviderSyncSchedule).tick()).toBe('skipped');
      fake.release();
      expect(await first).toBe('ran');
      // a's run failed (logged, not thrown) and released the lease: the next tick of either instance runs.
      expect(await b.app.get(ProviderSyncSchedule).tick()).toBe('ran');
    } finally {
      await b.close();
      await a.close();
    }
  });
});

describe('reconciliation in sandbox mode', () => {
  it('applies the sandbox\'s own events that its delivery could not', async () => {
    const t = await startTestApp();
    try {
      const org = (await createOrganisation(t)).id;
      const owner = await createUserWithSession(t, { org, role: 'owner' });
      const res = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: org, tier: 'team' }).expect(201);
      // The webhook endpoint refuses writes: Pay records the payment, the delivery fails.
      await t.db.query(`CREATE FUNCTION sync_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`);
      await t.db.query(`CREATE TRIGGER sync_test_refuse BEFORE INSERT ON provider_subscriptions FOR EACH ROW EXECUTE FUNCTION sync_test_refuse()`);
      await t.http().post(`${new URL(res.body.url).pathname}/pay`).type('form').send('').expect(502);
      await t.db.query(`DROP TRIGGER sync_test_refuse ON provider_subscriptions`);
      await t.db.query(`DROP FUNCTION sync_test_refuse()`);
      expect((await licenseOf(t, org))?.tier).toBeUndefined();

      const summary = await t.app.get(ProviderSync).run();
      expect(summary).toMatchObject({ events_applied: 2, subscriptions_checked: 1, subscriptions_corrected: 0 });
      expect(await licenseOf(t, org)).toMatchObject({ tier: 'team', is_active: true });
    } finally {
      await t.close();
    }
  });
});
