import { CREDITS_TABLE, creditsTiersFile } from './support/credits';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

const APP = 'http://localhost:3000';
const KEY = 'svc-key-sandbox-recharge';

/**
 * Automatic top-ups with the built-in sandbox provider (spec §16.4, §16.6): a pack bought on its checkout page saves
 * the card; the sandbox pays the top-up's invoice and delivers `invoice.paid` (the grant); its portal page's
 * "Decline the next charge" makes the next one fail (the setting off, with its error).
 */
describe('sandbox: automatic top-ups', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { APP_URL: APP, SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile(CREDITS_TABLE) } });
  });
  // Its close waits for the job queue and the sandbox's deliveries under way: a teardown hook's 120 s, as the outage specs'.
  afterAll(() => t.close(), 120_000);

  const report = (org: string, amount: number) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount }).expect(200);
  const autoRecharge = async (org: string, owner: { auth: Record<string, string> }) =>
    (await t.http().get('/api/licensing/credits').query({ organisation_id: org }).set(owner.auth).expect(200)).body.data.find((m: { metric: string }) => m.metric === 'ai_tokens')
      .auto_recharge;

  it('pays the top-up (one grant from its invoice.paid); the portal declines the next one: setting off, last_error', async () => {
    const org = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    const setting = { organisation_id: org, metric: 'ai_tokens', pack: 'tokens_1k', threshold: 500, monthly_limit: 5 };
    // No card yet.
    expect((await t.http().put('/api/billing/credits/auto-recharge').set(owner.auth).send(setting).expect(409)).body.code).toBe('no_payment_method');

    // A pack bought on the sandbox's checkout page saves the card.
    const checkout = await t.http().post('/api/billing/credits/checkout').set(owner.auth).send({ organisation_id: org, pack: 'tokens_1k' }).expect(201);
    const path = new URL(checkout.body.url).pathname;
    const total = /name="total" value="(\d+)"/.exec((await t.http().get(path).expect(200)).text)![1];
    await t.http().post(`${path}/pay`).type('form').send({ total }).expect(303);
    await waitFor('the pack granted', async () => (await t.db.query(`SELECT 1 FROM credit_grants WHERE organisation_id = $1 AND source = 'top_up'`, [org])).length === 1);
    await t.http().put('/api/billing/credits/auto-recharge').set(owner.auth).send(setting).expect(200);

    // 100 included + 1000 of the pack: a report of 700 leaves 400 available, below 500.
    expect((await report(org, 700)).body).toMatchObject({ available: 400 });
    const [grant] = await waitFor('the top-up granted', async () => {
      const rows = await t.db.query(`SELECT amount::float8 AS amount, reference FROM credit_grants WHERE organisation_id = $1 AND source = 'auto_recharge'`, [org]);
      return rows.length === 1 && rows;
    });
    expect(grant).toEqual({ amount: 1000, reference: expect.stringMatching(/^in_/) });
    expect(await autoRecharge(org, owner)).toMatchObject({ enabled: true, recharges_this_month: 1, last_error: null });

    // The portal's button: the next charge is declined.
    const portal = await t.http().get('/api/billing/portal').query({ organisation_id: org }).set(owner.auth).expect(200);
    const portalPath = new URL(portal.body.url).pathname;
    const page = await t.http().get(portalPath).expect(200);
    expect(page.text).toContain('<button type="submit" class="secondary">Decline the next charge</button>');
    const declined = await t.http().post(`${portalPath}/decline-next-charge`).type('form').send({}).expect(303);
    expect(declined.headers.location).toBe(`${portalPath}?done=declining`);
    expect((await t.http().get(declined.headers.location).expect(200)).text).toContain('The next automatic charge will be declined.');

    // 1400 available; a report of 1000 leaves 400.
    await report(org, 1000);
    const off = await waitFor('the setting off', async () => {
      const s = await autoRecharge(org, owner);
      return s.enabled === false && s;
    });
    expect(off).toMatchObject({ last_error: 'Your card was declined.', recharges_this_month: 1 });
    expect(await t.db.query(`SELECT status FROM credit_recharges WHERE organisation_id = $1 ORDER BY created_at`, [org])).toEqual([{ status: 'paid' }, { status: 'failed' }]);
    expect(await t.db.query(`SELECT 1 FROM credit_grants WHERE organisation_id = $1 AND source = 'auto_recharge'`, [org])).toHaveLength(1);
  });
});
