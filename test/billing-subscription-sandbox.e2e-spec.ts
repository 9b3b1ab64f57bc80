import { auditOf } from './support/subscribed';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

/**
 * The subscription routes (spec §11.4) in sandbox mode (spec §11.6): the sandbox is the provider, with its own
 * prices, proration and schedules, and delivers its signed events to the service in the background.
 */
describe('billing: subscription changes in the sandbox', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  type User = Awaited<ReturnType<typeof createUserWithSession>>;
  const post = (owner: User, path: string, body: object) => t.http().post(`/api/billing/subscription/${path}`).set(owner.auth).send(body);
  const read = async (owner: User, organisationId: string) =>
    (await t.http().get('/api/billing/subscription').query({ organisation_id: organisationId }).set(owner.auth).expect(200)).body.subscription;
  const undelivered = async () => Number((await t.db.query(`SELECT count(*)::int AS n FROM sandbox_events WHERE delivered_at IS NULL`))[0].n);
  const settled = () => waitFor('the sandbox events delivered', async () => ((await undelivered()) === 0 ? true : undefined));

  it('upgrades now, schedules a downgrade, releases it, cancels and resumes; its events change nothing more', async () => {
    const organisationId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: organisationId, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: organisationId, tier: 'pro' }).expect(201);
    await t.http().post(`${new URL(checkout.body.url).pathname}/pay`).type('form').send('').expect(303);
    await settled();
    const bought = await read(owner, organisationId);
    expect(bought).toMatchObject({ tier: 'pro', status: 'active', interval: 'month', seats: 1, pending_change: null });

    const preview = await post(owner, 'preview', { organisation_id: organisationId, tier: 'team' }).expect(200);
    expect(preview.body.amount_due).toBeGreaterThan(0);
    expect(preview.body.amount_due).toBe(preview.body.lines.reduce((sum: number, l: { amount: number }) => sum + l.amount, 0));
    const upgraded = await post(owner, 'change', { organisation_id: organisationId, tier: 'team', proration_date: preview.body.proration_date }).expect(200);
    expect(upgraded.body.subscription).toMatchObject({ tier: 'team', pending_change: null });
    await settled();
    expect(await read(owner, organisationId)).toEqual(upgraded.body.subscription);

    const downgraded = await post(owner, 'change', { organisation_id: organisationId, tier: 'pro' }).expect(200);
    expect(downgraded.body.subscription).toMatchObject({
      tier: 'team',
      pending_change: { tier: 'pro', interval: 'month', seats: 1, effective_at: bought.current_period_end },
    });
    await settled();
    expect(await read(owner, organisationId)).toEqual(downgraded.body.subscription);
    await t.http().delete('/api/billing/subscription/pending-change').query({ organisation_id: organisationId }).set(owner.auth).expect(204);
    await settled();
    expect((await read(owner, organisationId)).pending_change).toBeNull();

    expect((await post(owner, 'cancel', { organisation_id: organisationId }).expect(200)).body.subscription.cancel_at_period_end).toBe(true);
    await settled();
    expect((await post(owner, 'resume', { organisation_id: organisationId }).expect(200)).body.subscription.cancel_at_period_end).toBe(false);
    await settled();
    expect(await read(owner, organisationId)).toMatchObject({ tier: 'team', cancel_at_period_end: false, pending_change: null });
    expect((await auditOf(t, organisationId)).map((a: { action: string }) => a.action)).toEqual([
      'subscription.changed',
      'subscription.changed',
      'subscription.pending_change_released',
      'subscription.cancel_scheduled',
      'subscription.resumed',
    ]);
    const failed = await t.db.query(`SELECT type, reason FROM webhook_events WHERE organisation_id = $1 AND status = 'failed'`, [organisationId]);
    expect(failed).toEqual([]);
  });
});
