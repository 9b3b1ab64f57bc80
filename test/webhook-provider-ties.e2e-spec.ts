import { EventDispatcher } from '../src/webhook/event-dispatcher';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './support/fake-provider';
import { licenseOf } from './support/license-state';
import { subscriptionEvent, subscriptionObject } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const PRICES = { pro: 'price_pro_monthly', team: 'price_team_monthly' };
const nowS = () => Math.floor(Date.now() / 1000);

/**
 * Two `.updated` of one subscription in the same second are settled by asking the provider what is
 * current (spec §6). The provider is asked outside the event's transaction: when it cannot answer (404,
 * failure, hang) the event is stored `failed` and answered 200, replayable; while it hangs, it holds no
 * database connection.
 */
describe('webhook: a tie of two .updated asks the provider outside the transaction', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeProvider({ prices: Object.values(PRICES) });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  const env = (timeoutMs: number, extra: Record<string, string> = {}) => ({
    ...fakeProviderEnv(fake, timeoutMs),
    PAYPROVIDER_PRICE_PRO: PRICES.pro,
    PAYPROVIDER_PRICE_TEAM: PRICES.team,
    ...extra,
  });

  /** An organisation on team through an update at `at`, and a second `.updated` (pro) of the same second. */
  async function tie(t: TestApp, at = nowS() - 100) {
    const org = (await createOrganisation(t)).id;
    const sub = subscriptionObject({ organisationId: org, tierSource: 'none', price: PRICES.pro });
    const send = (event: object) => deliver(t.app.getHttpServer(), event);
    await send(subscriptionEvent('created', sub, { created: at - 10 })).expect(200);
    const toTeam = { ...sub, items: subscriptionObject({ id: sub.id, tierSource: 'none', price: PRICES.team }).items };
    expect((await send(subscriptionEvent('updated', toTeam, { created: at })).expect(200)).body.status).toBe('processed');
    return { org, sub, send, second: (id?: string) => subscriptionEvent('updated', sub, { created: at, id }) };
  }

  describe('the provider cannot answer', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ env: env(300) });
    });
    afterAll(() => t.close());

    const ledger = async (id: string) => (await t.db.query(`SELECT status, reason FROM webhook_events WHERE id = $1`, [id]))[0];

    it('a 404 → 200, stored failed with the reason, nothing applied; replayed once the provider answers', async () => {
      const { org, sub, send, second } = await tie(t);
      const event = second();
      const res = await send(event).expect(200);
      expect(res.body).toEqual({ id: event.id, status: 'failed', reason: expect.stringMatching(new RegExp(`^provider_unavailable: .*${sub.id}`)) });
      expect(await ledger(event.id)).toEqual({ status: 'failed', reason: res.body.reason });
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /v1/subscriptions/${sub.id}`]);
      expect((await licenseOf(t, org)).tier).toBe('team');

      // The provider knows it now (it says pro): the replay applies what it says.
      fake.addSubscription({ ...sub, status: 'active' });
      expect(await t.app.get(EventDispatcher).replay(event.id, { actor: 'cli:test', requestId: null })).toEqual({ id: event.id, status: 'processed', reason: null });
      expect(await ledger(event.id)).toEqual({ status: 'processed', reason: null });
      expect((await licenseOf(t, org)).tier).toBe('pro');
    });

    it('a provider that fails or hangs → 200, stored failed; a redelivery applies it once the provider answers', async () => {
      for (const failure of [{ status: 500 }, 'hang'] as const) {
        fake.reset();
        const { org, sub, send, second } = await tie(t);
        fake.failPath('/v1/subscriptions/', failure);
        const event = second();
        const res = await send(event).expect(200);
        expect(res.body).toMatchObject({ status: 'failed', reason: expect.stringMatching(/^provider_unavailable: /) });
        expect((await licenseOf(t, org)).tier).toBe('team');

        fake.failPath('/v1/subscriptions/', undefined);
        fake.addSubscription({ ...sub, status: 'active' });
        expect((await send(event).expect(200)).body).toEqual({ id: event.id, status: 'processed', reason: null });
        expect((await licenseOf(t, org)).tier).toBe('pro');
      }
    });
  });

  describe('the provider hangs', () => {
    let t: TestApp;
    beforeAll(async () => {
      // Two connections in the pool, and a provider timeout longer than the test needs.
      t = await startTestApp({ env: env(10_000, { DATABASE_POOL_SIZE: '2' }) });
    });
    afterAll(() => t.close());

    it("ties waiting on the provider hold no database connection: another organisation's status read answers meanwhile", async () => {
      const { org, sub, send, second } = await tie(t);
      const other = (await createOrganisation(t)).id;
      const member = await createUserWithSession(t, { org: other });
      fake.addSubscription({ ...sub, status: 'active' });
      fake.hold('/v1/subscriptions/');
      const ties = 6;
      let settled = 0;
      const deliveries = Array.from({ length: ties }, () =>
        send(second()).then((res) => {
          settled++;
          return res;
        }),
      );
      // Every tie has asked the provider, and waits for it (each from its own delivery).
      await waitFor('every tie waiting on the provider', () => fake.held() === ties, 10_000);
      const status = await t.http().get('/api/licensing/status').query({ organisation_id: other }).set(member.auth);
      expect(status.status).toBe(200);
      expect(settled).toBe(0);

      fake.release();
      const answers = await Promise.all(deliveries);
      expect(answers.map((res) => [res.status, res.body.status])).toEqual(Array(ties).fill([200, 'processed']));
      expect((await licenseOf(t, org)).tier).toBe('pro');
    });
  });
});
