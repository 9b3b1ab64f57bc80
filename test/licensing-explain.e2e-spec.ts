import { errorBody } from './licensing-fixtures';
import { providerId, subscriptionEvent, subscriptionObject, SubscriptionOptions, TEST_PRICE_PRO } from './support/provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const KEY = 'svc_explain_key';
const DAY = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);

describe('GET /api/licensing/explain', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
  });
  afterAll(() => t.close());

  const explain = (organisationId: string, auth: Record<string, string> = { 'X-Service-Key': KEY }) =>
    t.http().get('/api/licensing/explain').query({ organisation_id: organisationId }).set(auth);

  /** Delivers one signed subscription event for the organisation; answers the subscription object and event. */
  async function send(kind: 'created' | 'updated' | 'deleted', o: SubscriptionOptions & { organisationId: string }, created = nowS()) {
    const sub = subscriptionObject(o);
    const event = subscriptionEvent(kind, sub, { created });
    await deliver(t.app.getHttpServer(), event).expect(200);
    return { sub, event };
  }

  /** What the status read says of the license: explain must agree with it. */
  async function license(organisationId: string) {
    const { body } = await t.http().get('/api/licensing/status').query({ organisation_id: organisationId }).set((await member(organisationId)).auth).expect(200);
    return body.license as { tier: string; is_active: boolean; is_expired: boolean };
  }
  const member = (org: string) => createUserWithSession(t, { org, role: 'member' });

  it('an organisation without subscriptions: free, because it has none; members and service keys may ask', async () => {
    const org = (await createOrganisation(t)).id;
    const expected = { tier: 'free', is_active: true, is_expired: false, plan_version: { version: 1, recorded_at: expect.any(String) }, because: [{ kind: 'no_subscription', reason: expect.stringMatching(/has no subscription/) }], grants: [] };
    expect((await explain(org).expect(200)).body).toEqual(expected);
    expect((await explain(org, (await member(org)).auth).expect(200)).body).toEqual(expected);
  });

  it('refuses: 400 bad id, 401 no credential, 403 a stranger, 404 an unknown organisation for a service key', async () => {
    const org = (await createOrganisation(t)).id;
    expect((await explain('nope').expect(400)).body).toEqual(errorBody(400, 'validation_failed'));
    expect((await explain(org, {}).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
    const stranger = await member((await createOrganisation(t)).id);
    expect((await explain(org, stranger.auth).expect(403)).body).toEqual(errorBody(403, 'organisation_forbidden'));
    expect((await explain('00000000-0000-4000-8000-000000000000').expect(404)).body).toEqual(errorBody(404, 'organisation_not_found'));
  });

  it('the subscription chosen, its tier resolved by the configured price, and its events newest first with their outcome (a late older one stale)', async () => {
    const org = (await createOrganisation(t)).id;
    const id = providerId('sub');
    const customer = providerId('cus');
    const base = { id, customer, organisationId: org, price: TEST_PRICE_PRO, tierSource: 'none' as const };
    const created = await send('created', { ...base, status: 'incomplete' }, nowS() - 300);
    const updated = await send('updated', { ...base, status: 'active' }, nowS() - 200);
    // An older update arriving late changes nothing: it shows as stale.
    const late = await send('updated', { ...base, status: 'past_due' }, nowS() - 250);

    const { body } = await explain(org).expect(200);
    expect(body).toEqual({
      tier: 'pro',
      is_active: true,
      is_expired: false,
      plan_version: { version: 1, recorded_at: expect.any(String) },
      grants: [],
      because: [
        { kind: 'subscription', id, status: 'active', tier: 'pro', tier_source: 'configured_price' },
        { kind: 'event', id: updated.event.id, type: 'customer.subscription.updated', created: updated.event.created, outcome: 'processed', reason: null },
        { kind: 'event', id: late.event.id, type: 'customer.subscription.updated', created: late.event.created, outcome: 'stale', reason: expect.stringMatching(/older than the last event/) },
        { kind: 'event', id: created.event.id, type: 'customer.subscription.created', created: created.event.created, outcome: 'processed', reason: null },
      ],
    });
    expect(await license(org)).toEqual({ tier: body.tier, is_active: body.is_active, is_expired: body.is_expired });
  });

  it('why each other subscription was not chosen: deleted, lower tier, older, not live, incomplete', async () => {
    const org = (await createOrganisation(t)).id;
    const customer = providerId('cus');
    const sub = (o: SubscriptionOptions) => ({ id: providerId('sub'), customer, organisationId: org, ...o });
    const chosen = await send('created', sub({ tier: 'team', tierSource: 'lookup_key', lookupKey: 'team_yearly' }), nowS() - 100);
    const older = await send('created', sub({ tier: 'team', tierSource: 'subscription_metadata' }), nowS() - 500);
    const lower = await send('created', sub({ tier: 'pro' }), nowS() - 50);
    const enterprise = sub({ tier: 'enterprise' });
    await send('created', enterprise, nowS() - 400);
    await send('deleted', enterprise, nowS() - 300);
    // past_due for longer than the 7-day grace: an enterprise one that is not live.
    const lapsed = await send('created', sub({ tier: 'enterprise', status: 'past_due' }), nowS() - 8 * DAY);
    const incomplete = await send('created', sub({ tier: 'enterprise', status: 'incomplete' }), nowS() - 40);

    const { body } = await explain(org).expect(200);
    expect(body.tier).toBe('team');
    expect(body.because[0]).toEqual({ kind: 'subscription', id: chosen.sub.id, status: 'active', tier: 'team', tier_source: 'lookup_key' });
    expect(body.because[1]).toMatchObject({ kind: 'event', id: chosen.event.id, outcome: 'processed' });
    const reasons = body.because.filter((step: { kind: string }) => step.kind === 'not_chosen');
    // Newest last event first.
    expect(reasons).toEqual([
      { kind: 'not_chosen', id: incomplete.sub.id, status: 'incomplete', tier: 'enterprise', reason: 'incomplete' },
      { kind: 'not_chosen', id: lower.sub.id, status: 'active', tier: 'pro', reason: 'lower_tier' },
      { kind: 'not_chosen', id: enterprise.id, status: 'canceled', tier: 'enterprise', reason: 'deleted' },
      { kind: 'not_chosen', id: older.sub.id, status: 'active', tier: 'team', reason: 'older' },
      { kind: 'not_chosen', id: lapsed.sub.id, status: 'past_due', tier: 'enterprise', reason: 'not_live' },
    ]);
    expect(await license(org)).toEqual({ tier: 'team', is_active: true, is_expired: false });
  });

  it('a subscription deleted before any event resolved its tier: free, and the deletion is why', async () => {
    const org = (await createOrganisation(t)).id;
    const id = providerId('sub');
    const customer = providerId('cus');
    // A deletion needs no tier: it is applied and stored without one.
    await send('deleted', { id, customer, organisationId: org, tierSource: 'none' });
    const { body } = await explain(org).expect(200);
    expect(body).toEqual({
      tier: 'free',
      is_active: true,
      is_expired: false,
      plan_version: { version: 1, recorded_at: expect.any(String) },
      grants: [],
      because: [
        { kind: 'no_subscription', reason: expect.stringMatching(/no subscription can shape the license/) },
        { kind: 'not_chosen', id, status: 'canceled', tier: null, reason: 'deleted' },
      ],
    });
  });

  it('grace: a past_due subscription within its grace period keeps its tier, until past_due_since + GRACE_PERIOD_DAYS', async () => {
    const org = (await createOrganisation(t)).id;
    const base = { id: providerId('sub'), customer: providerId('cus'), organisationId: org, tier: 'pro' };
    await send('created', { ...base, status: 'active' }, nowS() - 3 * DAY);
    const { event } = await send('updated', { ...base, status: 'past_due' }, nowS() - 2 * DAY);
    await send('updated', { ...base, status: 'past_due' }, nowS() - DAY);

    const { body } = await explain(org).expect(200);
    expect(body).toMatchObject({ tier: 'pro', is_active: true, is_expired: false });
    // Grace counts from the first past_due event, not the latest.
    expect(body.because[0]).toEqual({ kind: 'grace', subscription_id: base.id, past_due_since: event.created, ends_at: event.created + 7 * DAY, in_grace: true });
    expect(body.because[1]).toEqual({ kind: 'subscription', id: base.id, status: 'past_due', tier: 'pro', tier_source: 'price_metadata' });
    expect(body.because.filter((s: { kind: string }) => s.kind === 'event')).toHaveLength(3);
  });

  it('overrides in force come first, newest first; an expired one is not listed', async () => {
    const org = (await createOrganisation(t)).id;
    const put = (name: string, body: object) =>
      t.http().put(`/api/admin/organisations/${org}/overrides/${name}`).set('X-Service-Key', KEY).send(body).expect(200);
    const sso = (await put('sso', { value: true, note: 'Pilot' })).body;
    const projects = (await put('projects', { value: 50, expires_at: new Date(Date.now() + DAY * 1000).toISOString() })).body;
    await put('api_access', { value: false, expires_at: new Date(Date.now() + 60_000).toISOString() });
    await t.db.query(`UPDATE entitlement_overrides SET expires_at = now() - interval '1 second' WHERE organisation_id = $1 AND name = 'api_access'`, [org]);
    await t.db.query(`UPDATE entitlement_overrides SET created_at = created_at + interval '1 second' WHERE organisation_id = $1 AND name = 'projects'`, [org]);

    const { body } = await explain(org).expect(200);
    expect(body.because).toEqual([
      { kind: 'override', ...projects, created_at: expect.any(String) },
      { kind: 'override', ...sso },
      { kind: 'no_subscription', reason: expect.any(String) },
    ]);
  });

  it('grace over: the past_due subscription is still the one chosen (none is live), not active and expired', async () => {
    const org = (await createOrganisation(t)).id;
    const base = { id: providerId('sub'), customer: providerId('cus'), organisationId: org, tier: 'team' };
    const { event } = await send('created', { ...base, status: 'past_due' }, nowS() - 9 * DAY);
    const { body } = await explain(org).expect(200);
    expect(body).toMatchObject({ tier: 'team', is_active: false, is_expired: true });
    expect(body.because[0]).toEqual({ kind: 'grace', subscription_id: base.id, past_due_since: event.created, ends_at: event.created + 7 * DAY, in_grace: false });
    expect(await license(org)).toEqual({ tier: 'team', is_active: false, is_expired: true });
  });
});
