import { eventCommands } from '../src/cli/events.commands';
import { SyncSummary } from '../src/webhook/provider-sync';
import { packsTiersFile } from './support/credit-packs';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { providerEvent, providerId } from './support/provider-events';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const DAY_MS = 86_400_000;
const nowS = () => Math.floor(Date.now() / 1000);

/**
 * A paid credit pack's grant (spec §16.3): from `checkout.session.completed` (paid) or
 * `checkout.session.async_payment_succeeded`, real HMAC-signed, on two instances of one database, and from
 * provider:sync against the strict double: exactly one grant per session, whatever the number, order or source.
 */
describe('credits: a paid pack is granted once per checkout session', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let fake: FakeProvider;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startFakeProvider();
    const env = { ...fakeProviderEnv(fake, 2000), TIERS_FILE: packsTiersFile(), NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret };
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await fake.close();
    await receiver.close();
  });
  beforeEach(() => fake.reset());

  /** A pack's checkout session as the provider sends it in its events, for an organisation of ours. */
  function packSession(org: string, o: { pack?: string; quantity?: number; paid?: boolean; customer?: string } = {}) {
    const quantity = o.quantity ?? 1;
    return {
      id: providerId('cs_test'),
      object: 'checkout.session',
      mode: 'payment',
      status: 'complete',
      payment_status: o.paid === false ? 'unpaid' : 'paid',
      customer: o.customer ?? providerId('cus'),
      client_reference_id: org,
      invoice: providerId('in'),
      subscription: null,
      amount_total: 1000 * quantity,
      currency: 'eur',
      created: nowS() - 60,
      metadata: { organisation_id: org, pack: o.pack ?? 'tokens_1m', quantity: String(quantity), purpose: 'credit_pack' },
    };
  }
  const completed = (session: object) => providerEvent('checkout.session.completed', session);
  const asyncSucceeded = (session: object) => providerEvent('checkout.session.async_payment_succeeded', { ...session, payment_status: 'paid' });
  const send = (t: TestApp, event: object) => deliver(t.app.getHttpServer(), event).expect(200);
  const grants = (org: string) =>
    a.db.query(
      `SELECT metric, amount::float8 AS amount, remaining::float8 AS remaining, category, source, reference, expires_at FROM credit_grants WHERE organisation_id = $1`,
      [org],
    );
  const ledger = (org: string) => a.db.query(`SELECT kind, amount::float8 AS amount, reference FROM credit_ledger WHERE organisation_id = $1 ORDER BY id`, [org]);
  const outcomes = async (ids: string[]) =>
    a.db.query(`SELECT id, status, reason, source FROM webhook_events WHERE id = ANY($1) ORDER BY received_at, id`, [ids]);

  it('completed and paid: one grant of amount × quantity (paid, top_up, expiring after expires_after_days), its ledger entry with the session, one credits.granted', async () => {
    const org = (await createOrganisation(a)).id;
    const session = packSession(org, { quantity: 3 });
    const event = completed(session);
    const res = await send(a, event);
    expect(res.body).toMatchObject({ status: 'processed', reason: expect.stringMatching(/^granted 3000000 ai_tokens \(grant [0-9a-f-]{36}\)$/) });

    const [grant] = await grants(org);
    expect(grant).toMatchObject({ metric: 'ai_tokens', amount: 3_000_000, remaining: 3_000_000, category: 'paid', source: 'top_up', reference: session.id });
    // tokens_1m expires after 365 days.
    expect(Math.abs(new Date(grant.expires_at).getTime() - (Date.now() + 365 * DAY_MS))).toBeLessThan(60_000);
    expect(await ledger(org)).toEqual([{ kind: 'grant', amount: 3_000_000, reference: session.id }]);
    const [message] = await waitFor('credits.granted', () => receiver.accepted(org).length >= 1 && receiver.accepted(org));
    expect(message.json).toMatchObject({ type: 'credits.granted', data: { organisation_id: org, metric: 'ai_tokens', amount: 3_000_000, source: 'top_up', category: 'paid' } });

    // A pack without expires_after_days never expires.
    const never = packSession(org, { pack: 'tokens_5m' });
    await send(a, completed(never));
    expect((await grants(org)).find((g: { reference: string }) => g.reference === never.id)).toMatchObject({ amount: 5_000_000, expires_at: null });
  });

  it('once per session whatever the number and order of events: redeliveries, the other event type, both orders, two instances at once', async () => {
    const org = (await createOrganisation(a)).id;
    // completed, redelivered, then the async success (a provider sending both).
    const first = packSession(org);
    const e1 = completed(first);
    const e2 = asyncSucceeded(first);
    await send(a, e1);
    expect((await send(b, e1)).body).toMatchObject({ status: 'duplicate' });
    expect((await send(b, e2)).body).toMatchObject({ status: 'processed', reason: expect.stringMatching(/^already granted: 1000000 ai_tokens/) });

    // The async success first, then a late completed (unpaid: a bank debit), then a completed saying paid.
    const second = packSession(org, { quantity: 2 });
    await send(a, asyncSucceeded(second));
    expect((await send(a, completed({ ...second, payment_status: 'unpaid' }))).body).toMatchObject({ status: 'processed', reason: expect.stringMatching(/^not paid yet/) });
    await send(b, completed(second));

    // Twenty distinct events of one session delivered at once, to two instances.
    const third = packSession(org, { quantity: 5 });
    const burst = Array.from({ length: 20 }, (_, i) => (i % 2 ? completed(third) : asyncSucceeded(third)));
    // As the provider does, an event answered 503 (the database too busy: nothing committed) is delivered again;
    // any other answer than 200 or 503 is a fault.
    const refused: number[] = [];
    await Promise.all(
      burst.map(async (e, i) => {
        for (let status = 0; status !== 200; ) {
          status = (await deliver((i % 2 ? a : b).app.getHttpServer(), e)).status;
          if (status !== 200 && status !== 503) refused.push(status);
          if (refused.length) return;
        }
      }),
    );
    expect(refused).toEqual([]);
    const burstOutcomes = await outcomes(burst.map((e) => e.id));
    expect(burstOutcomes.filter((o: { reason: string }) => /^granted/.test(o.reason))).toHaveLength(1);
    expect(burstOutcomes.filter((o: { reason: string }) => /^already granted/.test(o.reason))).toHaveLength(19);

    const byReference = (await grants(org)).map((g: { reference: string; amount: number }) => [g.reference, g.amount]).sort();
    expect(byReference).toEqual([[first.id, 1_000_000], [second.id, 2_000_000], [third.id, 5_000_000]].sort());
    expect((await ledger(org)).filter((e: { kind: string }) => e.kind === 'grant')).toHaveLength(3);
    await waitFor('three credits.granted', () => receiver.accepted(org).length >= 3);
    expect(receiver.accepted(org).filter((m) => m.json.type === 'credits.granted')).toHaveLength(3);
  });

  it('an unpaid completed grants nothing until the async payment succeeds', async () => {
    const org = (await createOrganisation(a)).id;
    const session = packSession(org, { paid: false });
    await send(a, completed(session));
    expect(await grants(org)).toEqual([]);
    await send(a, asyncSucceeded(session));
    expect(await grants(org)).toEqual([expect.objectContaining({ reference: session.id, amount: 1_000_000 })]);
  });

  it('provider:sync grants a paid session no webhook delivered, and the late webhook then grants nothing', async () => {
    const org = (await createOrganisation(a)).id;
    const session = packSession(org, { quantity: 2 });
    const lost = completed(session);
    fake.addEvent(lost);
    const summary = (await eventCommands['provider:sync'].run(b.app, { since: '1' }, [], b.config)) as SyncSummary;
    expect(summary).toMatchObject({ events_applied: 1 });
    const asked = fake.requests.find((r) => r.path === '/v1/events')!;
    expect(asked.query.types).toEqual(expect.arrayContaining(['checkout.session.completed', 'checkout.session.async_payment_succeeded']));
    expect(await grants(org)).toEqual([expect.objectContaining({ reference: session.id, amount: 2_000_000 })]);
    expect(await outcomes([lost.id])).toEqual([expect.objectContaining({ source: 'sync', status: 'processed' })]);

    // The webhook arrives late (as a redelivery, and as the other type): nothing more.
    expect((await send(a, lost)).body.status).toBe('duplicate');
    expect((await send(a, asyncSucceeded(session))).body.reason).toMatch(/^already granted/);
    expect(await grants(org)).toHaveLength(1);
  });

  it("grants nothing for a subscription's session, another product's, a pack the table does not sell, a deleted organisation, or metadata naming another customer's organisation", async () => {
    const org = (await createOrganisation(a)).id;
    const subscription = { ...packSession(org), mode: 'subscription', metadata: { organisation_id: org, tier: 'pro' } };
    expect((await send(a, completed(subscription))).body).toMatchObject({ status: 'ignored', reason: expect.stringMatching(/subscription/) });
    const foreign = { ...packSession(org), metadata: {}, client_reference_id: null };
    expect((await send(a, completed(foreign))).body).toMatchObject({ status: 'ignored' });

    const unknown = completed(packSession(org, { pack: 'tokens_9m' }));
    expect((await send(a, unknown)).body).toMatchObject({ status: 'failed', reason: 'pack_unknown: the tier table sells no credit pack "tokens_9m"' });
    const badQuantity = completed({ ...packSession(org), metadata: { organisation_id: org, pack: 'tokens_1m', quantity: '0', purpose: 'credit_pack' } });
    expect((await send(a, badQuantity)).body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^invalid_event: a credit pack's session/) });

    const gone = '0b7c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11';
    expect((await send(a, completed({ ...packSession(gone), client_reference_id: gone }))).body).toMatchObject({ status: 'ignored' });

    // A customer linked to one organisation, metadata naming another: a conflict, nothing granted to either.
    const owner = (await createOrganisation(a)).id;
    const customer = providerId('cus');
    await a.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [owner, customer]);
    expect((await send(a, completed(packSession(org, { customer })))).body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^organisation_conflict/) });

    expect(await grants(org)).toEqual([]);
    expect(await grants(owner)).toEqual([]);
  });

  it('a checkout whose grant would exceed the largest grant is refused before the provider is called', async () => {
    const org = (await createOrganisation(a)).id;
    const owner = await createUserWithSession(a, { org, role: 'owner' });
    fake.addCustomer('cus_big');
    await a.db.query(`UPDATE organisations SET provider_customer_id = 'cus_big' WHERE id = $1`, [org]);
    // A pack of 10^12 bought twice is more than one grant may hold.
    const big = await startTestApp({
      env: { ...fakeProviderEnv(fake, 2000), TIERS_FILE: packsTiersFile({ tiers: { free: { projects: 3, ai_tokens: 100, users: 3 } }, credit_packs: { huge: { metric: 'ai_tokens', amount: 1e12 } } }), PAYPROVIDER_PRICE_PACK_HUGE: 'price_huge' },
      databaseUrl: a.databaseUrl,
    });
    fake.reset(); // its start's price reads
    try {
      const res = await big.http().post('/api/billing/credits/checkout').set(owner.auth).send({ organisation_id: org, pack: 'huge', quantity: 2 }).expect(400);
      expect(res.body).toMatchObject({ code: 'validation_failed', message: 'quantity must be at most 1 for the pack huge.' });
      expect(fake.requests).toEqual([]);
    } finally {
      await big.close();
    }
  });
});
