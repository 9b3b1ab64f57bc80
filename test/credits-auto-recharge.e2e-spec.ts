import { AutoRechargeJobs } from '../src/billing/auto-recharge.jobs';
import { errorBody } from './licensing-fixtures';
import { CREDITS_TABLE, creditsTiersFile, giveCredits } from './support/credits';
import { FakeProvider, fakeProviderEnv, RecordedRequest, startFakeProvider } from './support/fake-provider';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

const KEY = 'svc-key-auto-recharge';
const ONE_TIME = { recurring: null, type: 'one_time', currency: 'eur' };
const TABLE = { ...CREDITS_TABLE, credit_packs: { tokens_1k: { metric: 'ai_tokens', amount: 1000 }, gpu_100: { metric: 'gpu_s', amount: 100 } } };
type User = Awaited<ReturnType<typeof createUserWithSession>>;

/**
 * Automatic top-ups (spec §16.4) against the strict provider double through the real SDK, on two instances of one
 * database: the setting's routes, the off-session purchase after a report (an invoice, its item, finalize, pay, each
 * keyed by the recharge), the grant once on `invoice.paid` / `invoice.payment_succeeded`, one recharge in flight,
 * the monthly limit, a retry after the provider failed, and a decline turning the setting off.
 */
describe('credits: automatic top-ups', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let fake: FakeProvider;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    fake = await startFakeProvider();
    fake.addPrice('price_tokens_1k', { ...ONE_TIME, unit_amount: 500 });
    fake.addPrice('price_gpu_100', { ...ONE_TIME, unit_amount: 900 });
    const env = {
      ...fakeProviderEnv(fake, 2000),
      SERVICE_API_KEYS: KEY,
      TIERS_FILE: creditsTiersFile(TABLE),
      PAYPROVIDER_PRICE_PACK_TOKENS_1K: 'price_tokens_1k',
      PAYPROVIDER_PRICE_PACK_GPU_100: 'price_gpu_100',
      NOTIFY_URLS: receiver.url,
      NOTIFY_SECRET: secret,
    };
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
    fake.webhookTarget(a.baseUrl);
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await fake.close();
    await receiver.close();
  });

  /** An organisation whose owner signs in, with a provider customer (with a card unless `card: false`). */
  async function customerOrg(o: { card?: boolean; credits?: number } = {}): Promise<{ org: string; owner: User; customer: string }> {
    const org = (await createOrganisation(a)).id;
    const owner = await createUserWithSession(a, { org, role: 'owner' });
    const customer = fake.addCustomer(undefined, { invoice_settings: { default_payment_method: o.card === false ? null : 'pm_card_visa' } });
    await a.db.query(`UPDATE organisations SET provider_customer_id = $2 WHERE id = $1`, [org, customer]);
    if (o.credits) await giveCredits(a, org, o.credits);
    return { org, owner, customer };
  }
  const save = (user: User, body: Record<string, unknown>, t: TestApp = a) => t.http().put('/api/billing/credits/auto-recharge').set(user.auth).send(body);
  const setting = (org: string, more: Record<string, unknown> = {}) => ({ organisation_id: org, metric: 'ai_tokens', pack: 'tokens_1k', threshold: 300, monthly_limit: 3, ...more });
  const report = (t: TestApp, org: string, amount: number) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount }).expect(200);
  const recharges = (org: string) =>
    a.db.query(`SELECT id, status, invoice_id AS "invoiceId", pack FROM credit_recharges WHERE organisation_id = $1 ORDER BY created_at`, [org]);
  const rechargeGrants = (org: string) =>
    a.db.query(`SELECT amount::float8 AS amount, category, reference FROM credit_grants WHERE organisation_id = $1 AND source = 'auto_recharge'`, [org]);
  const audits = (org: string) => a.db.query(`SELECT action, after FROM audit_log WHERE organisation_id = $1 AND action LIKE 'credit_auto_recharge.%' ORDER BY id`, [org]);
  const ofCustomer = (customer: string) => (r: RecordedRequest) =>
    r.method === 'POST' && (r.body.customer === customer || [...fake.invoices.values()].some((i) => i.customer === customer && r.path.startsWith(`/v1/invoices/${i.id}/`)));
  const invoicesOf = (customer: string) => [...fake.invoices.values()].filter((i) => i.customer === customer);

  it('PUT saves the setting (200, audited, in the credits read); DELETE removes it (204, again 204)', async () => {
    const { org, owner } = await customerOrg();
    const res = await save(owner, setting(org)).expect(200);
    expect(res.body).toEqual({ metric: 'ai_tokens', pack: 'tokens_1k', threshold: 300, monthly_limit: 3, enabled: true, recharges_this_month: 0, last_error: null });
    const read = await a.http().get('/api/licensing/credits').query({ organisation_id: org }).set(owner.auth).expect(200);
    expect(read.body.data.find((m: { metric: string }) => m.metric === 'ai_tokens').auto_recharge).toEqual(res.body);
    expect((await save(owner, setting(org, { threshold: 0, monthly_limit: 100 })).expect(200)).body).toMatchObject({ threshold: 0, monthly_limit: 100 });
    expect((await audits(org)).map((e: { action: string }) => e.action)).toEqual(['credit_auto_recharge.saved', 'credit_auto_recharge.saved']);

    await a.http().delete('/api/billing/credits/auto-recharge').query({ organisation_id: org, metric: 'ai_tokens' }).set(owner.auth).expect(204);
    await a.http().delete('/api/billing/credits/auto-recharge').query({ organisation_id: org, metric: 'ai_tokens' }).set(owner.auth).expect(204);
    expect(await a.db.query(`SELECT 1 FROM credit_auto_recharges WHERE organisation_id = $1`, [org])).toEqual([]);
    expect((await audits(org)).map((e: { action: string }) => e.action)).toEqual(['credit_auto_recharge.saved', 'credit_auto_recharge.saved', 'credit_auto_recharge.deleted']);
  });

  it('bad input: 400 in the shared error shape, a member 403, no payment method 409; nothing changed', async () => {
    const { org, owner } = await customerOrg();
    const cases: [Record<string, unknown>, string][] = [
      [{ metric: 'nope' }, 'invalid_credit_metric'],
      [{ metric: 'api_s' }, 'invalid_credit_metric'],
      [{ metric: 'projects' }, 'invalid_credit_metric'],
      [{ pack: 'nope' }, 'invalid_pack'],
      [{ pack: 'gpu_100' }, 'invalid_pack'],
      [{ threshold: -1 }, 'validation_failed'],
      [{ threshold: 1.5 }, 'validation_failed'],
      [{ monthly_limit: 0 }, 'validation_failed'],
      [{ monthly_limit: 101 }, 'validation_failed'],
      [{ enabled: false }, 'validation_failed'],
      [{ organisation_id: 'not-a-uuid' }, 'validation_failed'],
    ];
    for (const [change, code] of cases) {
      const res = await save(owner, setting(org, change));
      if (res.status !== 400 || res.body.code !== code) {
        throw new Error(`${JSON.stringify(change)}: ${res.status} ${JSON.stringify(res.body)}`);
      }
      expect(res.body).toMatchObject({ statusCode: 400, error: expect.any(String), message: expect.anything() });
    }
    const member = await createUserWithSession(a, { org, role: 'member' });
    await save(member, setting(org)).expect(403);

    const noCard = await customerOrg({ card: false });
    expect((await save(noCard.owner, setting(noCard.org)).expect(409)).body).toEqual(errorBody(409, 'no_payment_method'));
    const noCustomer = (await createOrganisation(a)).id;
    const noCustomerOwner = await createUserWithSession(a, { org: noCustomer, role: 'owner' });
    expect((await save(noCustomerOwner, setting(noCustomer)).expect(409)).body.code).toBe('no_payment_method');

    for (const o of [org, noCard.org, noCustomer]) {
      expect(await a.db.query(`SELECT 1 FROM credit_auto_recharges WHERE organisation_id = $1`, [o])).toEqual([]);
      expect(await audits(o)).toEqual([]);
    }
    expect(fake.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/v1/invoice'))).toEqual([]);
  });

  it('a report leaving available below the threshold buys one pack: four keyed requests; invoice.paid and payment_succeeded grant it once', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    // 100 included, then 250 of the 500 granted: 250 available, below 300.
    const answer = (await report(a, org, 350)).body;
    expect(answer).toMatchObject({ balance: 250, available: 250 });
    const [recharge] = await waitFor('the recharge paid', async () => {
      const rows = await recharges(org);
      return rows.length === 1 && rows[0].invoiceId && invoicesOf(customer)[0]?.status === 'paid' && rows;
    });
    const calls = fake.requests.filter(ofCustomer(customer));
    expect(calls.map((r) => `${r.method} ${r.path.replace(/in_[0-9a-f]+/, ':id')} ${r.headers['idempotency-key']}`)).toEqual([
      `POST /v1/invoices recharge_${recharge.id}_invoice`,
      `POST /v1/invoiceitems recharge_${recharge.id}_item`,
      `POST /v1/invoices/:id/finalize recharge_${recharge.id}_finalize`,
      `POST /v1/invoices/:id/pay recharge_${recharge.id}_pay`,
    ]);
    expect(calls[0].body).toMatchObject({
      customer,
      auto_advance: 'false',
      pending_invoice_items_behavior: 'exclude',
      metadata: { organisation_id: org, pack: 'tokens_1k', purpose: 'auto_recharge', recharge_id: recharge.id },
    });
    expect(calls[1].body).toMatchObject({ customer, invoice: recharge.invoiceId, pricing: { price: 'price_tokens_1k' } });
    expect(calls[3].body).toMatchObject({ off_session: 'true' });
    expect(invoicesOf(customer)).toEqual([expect.objectContaining({ id: recharge.invoiceId, status: 'paid', amount_paid: 500 })]);
    // Nothing granted before the provider says so.
    expect(await rechargeGrants(org)).toEqual([]);
    expect(recharge.status).toBe('pending');

    const sent = fake.queuedEvents.filter((e) => e.data.object.customer === customer).map((e) => e.type);
    expect(sent).toEqual(['invoice.finalized', 'invoice.paid', 'invoice.payment_succeeded']);
    const events = fake.queuedEvents.filter((e) => e.data.object.customer === customer);
    expect(await fake.deliverEvents()).toEqual(expect.arrayContaining([200]));
    // A redelivery of invoice.paid, to the other instance.
    expect((await deliver(b.app.getHttpServer(), events[1]).expect(200)).body).toMatchObject({ status: 'duplicate' });
    expect(await rechargeGrants(org)).toEqual([{ amount: 1000, category: 'paid', reference: recharge.invoiceId }]);
    expect((await recharges(org))[0].status).toBe('paid');
    const read = await a.http().get('/api/licensing/credits').query({ organisation_id: org }).set(owner.auth).expect(200);
    expect(read.body.data.find((m: { metric: string }) => m.metric === 'ai_tokens')).toMatchObject({ auto_recharge: { recharges_this_month: 1, enabled: true } });
  });

  it("a reservation's commit that leaves available below the threshold buys a pack too", async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    const hold = await b.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount: 400 }).expect(201);
    const spent = await b.http().post(`/api/licensing/usage/reservations/${hold.body.id}/commit`).set('X-Service-Key', KEY).send({ amount: 350 }).expect(200);
    expect(spent.body).toMatchObject({ available: 250 });
    await waitFor('the invoice paid', () => invoicesOf(customer)[0]?.status === 'paid');
    expect(await recharges(org)).toHaveLength(1);
  });

  it('a setting removed before its purchase began buys nothing: the recharge failed, quietly', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    const [{ id }] = await a.db.query(`INSERT INTO credit_recharges (organisation_id, metric, pack) VALUES ($1, 'ai_tokens', 'tokens_1k') RETURNING id`, [org]);
    await a.http().delete('/api/billing/credits/auto-recharge').query({ organisation_id: org, metric: 'ai_tokens' }).set(owner.auth).expect(204);
    await a.app.get(AutoRechargeJobs).purchase(id);
    expect((await recharges(org)).map((r: { status: string }) => r.status)).toEqual(['failed']);
    expect(fake.requests.filter(ofCustomer(customer))).toEqual([]);
    expect(receiver.accepted(org).filter((m) => m.json.type === 'credits.recharge_failed')).toEqual([]);
  });

  it('a recharge whose report was already covered (another recharge paid in between) buys nothing on its first try; the next report due buys', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    // As the start after a report that read the balance before another recharge's grant: pending, with 600 available (≥ 300).
    const [{ id }] = await a.db.query(`INSERT INTO credit_recharges (organisation_id, metric, pack) VALUES ($1, 'ai_tokens', 'tokens_1k') RETURNING id`, [org]);
    await a.app.get(AutoRechargeJobs).purchase(id);
    expect((await recharges(org)).map((r: { status: string }) => r.status)).toEqual(['failed']);
    expect(fake.requests.filter(ofCustomer(customer))).toEqual([]);
    expect(receiver.accepted(org).filter((m) => m.json.type === 'credits.recharge_failed')).toEqual([]);
    // Not counted in the month, the setting still on: a report that leaves 250 available buys.
    await report(a, org, 350);
    await waitFor('the invoice paid', () => invoicesOf(customer)[0]?.status === 'paid');
    expect((await recharges(org)).map((r: { status: string }) => r.status)).toEqual(['failed', 'pending']);
  });

  it('a provider failure mid-purchase: the job runs again with the same keys, one invoice and one charge', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    // The item's request fails (the SDK's own retries too): the job fails, and the queue runs it again later.
    fake.failPath('/v1/invoiceitems', { status: 503 });
    await report(a, org, 350);
    const [recharge] = await waitFor('the recharge', async () => {
      const rows = await recharges(org);
      return rows.length === 1 && rows;
    });
    await waitFor('the job failed once', async () => {
      const [job] = await a.db.query(`SELECT attempts, last_error FROM graphile_worker._private_jobs WHERE key = $1`, [`credits_recharge:${recharge.id}`]);
      return job?.attempts >= 1 && job.last_error !== null;
    });
    fake.failPath('/v1/invoiceitems', undefined);
    await waitFor('the invoice paid', () => invoicesOf(customer)[0]?.status === 'paid');
    expect(invoicesOf(customer)).toHaveLength(1);
    expect(invoicesOf(customer)[0].lines.data).toHaveLength(1);
    const creates = fake.requests.filter((r) => r.path === '/v1/invoices' && r.body.customer === customer);
    expect(creates.length).toBeGreaterThanOrEqual(2);
    expect(new Set(creates.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(await recharges(org)).toHaveLength(1);
  });

  it('two instances, concurrent reports: one recharge in flight; the monthly limit stops the next', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 2000 });
    await save(owner, setting(org, { threshold: 1950, monthly_limit: 1 })).expect(200);
    await Promise.all(Array.from({ length: 10 }, (_, i) => report(i % 2 ? a : b, org, 20)));
    await waitFor('the invoice paid', () => invoicesOf(customer)[0]?.status === 'paid');
    // More reports below the threshold while the recharge is in flight: none made.
    const jobs = a.app.get(AutoRechargeJobs);
    expect(await jobs.start([{ organisationId: org, metric: 'ai_tokens' }])).toEqual([]);
    expect(await b.app.get(AutoRechargeJobs).start([{ organisationId: org, metric: 'ai_tokens' }])).toEqual([]);
    expect(await recharges(org)).toHaveLength(1);
    // Paid: the month's one recharge is used up.
    await fake.deliverEvents();
    await waitFor('paid', async () => (await recharges(org))[0].status === 'paid');
    expect(await jobs.start([{ organisationId: org, metric: 'ai_tokens' }])).toEqual([]);
    // Saved with a higher limit: the next report buys again.
    await save(owner, setting(org, { threshold: 5000, monthly_limit: 2 })).expect(200);
    await report(a, org, 1);
    await waitFor('the second invoice paid', () => invoicesOf(customer).filter((i) => i.status === 'paid').length === 2);
    expect(await recharges(org)).toHaveLength(2);
    expect(invoicesOf(customer)).toHaveLength(2);
  });

  it('a declined card: the setting off with last_error, one credits.recharge_failed, no grant; saving it again turns it on', async () => {
    const { org, owner, customer } = await customerOrg({ credits: 500 });
    await save(owner, setting(org)).expect(200);
    fake.declineCards(customer);
    await report(a, org, 350);
    const [row] = await waitFor('the recharge failed', async () => {
      const rows = await recharges(org);
      return rows[0]?.status === 'failed' && rows;
    });
    const read = await a.http().get('/api/licensing/credits').query({ organisation_id: org }).set(owner.auth).expect(200);
    expect(read.body.data.find((m: { metric: string }) => m.metric === 'ai_tokens').auto_recharge).toMatchObject({
      enabled: false,
      last_error: 'Your card was declined.',
      recharges_this_month: 0,
    });
    const [message] = await waitFor('credits.recharge_failed', () => {
      const got = receiver.accepted(org).filter((m) => m.json.type === 'credits.recharge_failed');
      return got.length >= 1 && got;
    });
    expect(message.json.data).toMatchObject({ organisation_id: org, metric: 'ai_tokens', pack: 'tokens_1k', recharge_id: row.id, error: 'Your card was declined.' });
    // Disabled: further reports below the threshold buy nothing.
    expect(await a.app.get(AutoRechargeJobs).start([{ organisationId: org, metric: 'ai_tokens' }])).toEqual([]);
    // The failed payment's event changes nothing; the job run again neither.
    await fake.deliverEvents();
    await a.app.get(AutoRechargeJobs).purchase(row.id);
    expect(receiver.accepted(org).filter((m) => m.json.type === 'credits.recharge_failed')).toHaveLength(1);
    expect(await rechargeGrants(org)).toEqual([]);
    expect(invoicesOf(customer)).toEqual([expect.objectContaining({ status: 'open' })]);

    expect((await save(owner, setting(org)).expect(200)).body).toMatchObject({ enabled: true, last_error: null });
  });
});
