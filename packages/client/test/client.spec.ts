import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { createClient, isServiceError, Notification, ServiceError, verifyEntitlements, verifyNotification } from '../src';
import { FakeProvider } from '../../../test/support/fake-provider';
import { newNotifySecret } from '../../../test/support/notification-receiver';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from '../../../test/support/subscribed';
import { packsTiersFile } from '../../../test/support/credit-packs';
import { creditsTiersFile } from '../../../test/support/credits';
import { startTestApp, TestApp } from '../../../test/support/test-app';
import { waitFor } from '../../../test/support/wait-for';

const KEY = 'svc_client_test_key';

/** A web app's notification endpoint that verifies with the client, as the integration guide shows. */
async function startVerifyingReceiver(secret: string) {
  const received: Notification[] = [];
  const refused: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        received.push(verifyNotification(Buffer.concat(chunks), req.headers, secret));
        res.writeHead(204).end();
      } catch (err) {
        refused.push((err as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/notify`;
  return { url, received, refused, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The client package against the real service (real PostgreSQL, real HTTP), as a web app uses it. */
describe('packages/client against the service', () => {
  const secret = newNotifySecret();
  let receiver: Awaited<ReturnType<typeof startVerifyingReceiver>>;
  let t: TestApp;

  beforeAll(async () => {
    receiver = await startVerifyingReceiver(secret);
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  /** The web app's back end provisions an organisation with an owner and signs the owner in. */
  async function provision(externalId: string) {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const organisation = await backEnd.admin.createOrganisation({ name: `Org ${externalId}`, external_id: externalId });
    const owner = await backEnd.admin.createUser({ email: `${externalId}@example.com`, external_id: `user_${externalId}` });
    await backEnd.admin.putMember(organisation.id, owner.id, { role: 'owner' });
    const { token } = await backEnd.admin.createSession({ user_id: owner.id });
    return { backEnd, organisation, owner, user: createClient({ baseUrl: t.baseUrl, session: token }) };
  }

  it('provisions idempotently and reads back what it made, typed', async () => {
    const { backEnd, organisation, owner, user } = await provision('client_a');
    expect(await backEnd.admin.createOrganisation({ name: 'ignored', external_id: 'client_a' })).toEqual(organisation);
    expect(await backEnd.admin.organisationByExternalId('client_a')).toEqual(organisation);
    expect(await backEnd.admin.user(owner.id)).toEqual(owner);

    const me = await user.me();
    expect(me.user.email).toBe('client_a@example.com');
    expect(me.organisations).toEqual([expect.objectContaining({ id: organisation.id, role: 'owner', tier: 'free' })]);
    expect((await user.members(organisation.id)).data).toEqual([{ user_id: owner.id, email: owner.email, role: 'owner' }]);

    const status = await user.status(organisation.id);
    expect(status.license).toEqual({ is_active: true, is_expired: false, tier: 'free' });
    expect(status.usage.users).toEqual({ used: 1, limit: 3, at_capacity: false });
    const entitlements = await user.entitlements(organisation.id);
    expect(entitlements).toMatchObject({ organisation_id: organisation.id, tier: 'free', seats: null, overrides: [] });
    expect(entitlements.limits.users).toEqual({ used: 1, limit: 3, at_capacity: false, overage: 'block', source: 'tier' });
    expect(entitlements.features).toEqual({ api_access: false, audit_log: false, sso: false });
    expect(await user.checkFeature(organisation.id, 'api_access')).toBe(false);

    // The back end grants a feature and a limit for a while; the user sees them, typed.
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const granted = await backEnd.admin.overrides.set(organisation.id, 'api_access', { value: true, expires_at: expiresAt, note: 'Pilot' });
    expect(granted).toMatchObject({ name: 'api_access', value: true, expires_at: expiresAt, note: 'Pilot' });
    await backEnd.admin.overrides.set(organisation.id, 'projects', { value: 7 });
    expect(await user.checkFeature(organisation.id, 'api_access')).toBe(true);
    expect((await user.entitlements(organisation.id)).limits.projects).toMatchObject({ limit: 7, source: 'override' });
    expect((await backEnd.admin.overrides.list(organisation.id)).map((o) => o.name)).toEqual(['api_access', 'projects']);
    await backEnd.admin.overrides.delete(organisation.id, 'api_access');
    const missing = await backEnd.admin.overrides.delete(organisation.id, 'api_access').catch((err: unknown) => err);
    expect(isServiceError(missing, 'override_not_found')).toBe(true);
    expect(await user.checkFeature(organisation.id, 'api_access')).toBe(false);
    expect(await user.history({ organisation_id: organisation.id })).toEqual({ data: [], has_more: false });
  });

  it('reads the public plan list without a credential, typed', async () => {
    const { data } = await createClient({ baseUrl: t.baseUrl }).plans();
    expect(data.map((plan) => plan.tier)).toEqual(['free', 'pro', 'team', 'enterprise']);
    expect(data[0]).toMatchObject({ per_seat: false, trial_days: 0, limits: { projects: 3, ai_tokens: 100000, users: 3 }, prices: [] });
    expect(data[1].prices.map((price) => `${price.interval} ${price.unit_amount} ${price.currency}`)).toEqual(['month 2900 EUR', 'year 29000 EUR']);
  });

  it("throws the service's errors with their code, status and request id", async () => {
    const { organisation } = await provision('client_b');
    const stranger = await provision('client_c');

    const forbidden = await stranger.user.status(organisation.id).catch((err: unknown) => err);
    expect(forbidden).toBeInstanceOf(ServiceError);
    expect(forbidden).toMatchObject({ status: 403, code: 'organisation_forbidden' });
    expect((forbidden as ServiceError).requestId).toEqual(expect.any(String));

    const anonymous = createClient({ baseUrl: t.baseUrl });
    const unauthenticated = await anonymous.me().catch((err: unknown) => err);
    expect(isServiceError(unauthenticated, 'unauthenticated')).toBe(true);
    expect(isServiceError(unauthenticated, 'organisation_forbidden')).toBe(false);
  });

  it('reports usage up to the limit, is refused past it, and the web app hears of it by a verified notification', async () => {
    const { backEnd, organisation } = await provision('client_d');
    const used = await backEnd.reportUsage({ organisation_id: organisation.id, metric: 'projects', amount: 3 });
    expect(used).toEqual({ metric: 'projects', used: 3, limit: 3, at_capacity: true });
    const refused = await backEnd.reportUsage({ organisation_id: organisation.id, metric: 'projects', amount: 1 }).catch((err: unknown) => err);
    expect(isServiceError(refused, 'limit_exceeded') && refused.status).toBe(402);
    expect(await backEnd.check({ organisation_id: organisation.id, metric: 'projects', amount: 1 })).toMatchObject({ allowed: false });
    const batch = await backEnd.reportUsageBatch([
      { organisation_id: organisation.id, metric: 'ai_tokens', amount: 10 },
      { organisation_id: organisation.id, metric: 'projects', amount: 1 },
    ]);
    expect(batch.results).toEqual([
      { status: 200, used: 10, limit: 100_000, at_capacity: false },
      { status: 402, used: 3, limit: 3, at_capacity: true, code: 'limit_exceeded' },
    ]);

    const message = await waitFor('its usage.capacity notification', () => receiver.received.find((m) => m.data.organisation_id === organisation.id));
    expect(message).toMatchObject({ type: 'usage.capacity', data: { metric: 'projects', at_capacity: true, external_id: 'client_d' } });
    expect(receiver.refused).toEqual([]);
  });

  it('refuses a notification that was not signed with the secret, or was altered', () => {
    const body = JSON.stringify({ type: 'license.updated', timestamp: new Date().toISOString(), data: {} });
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' };
    expect(() => verifyNotification(body, headers, secret)).toThrow();
    expect(() => verifyNotification(body, {}, secret)).toThrow();
  });

  it('gates features offline: fetches a signed token and verifies it against the JWKS, fetched by URL or kept as a set', async () => {
    const { backEnd, organisation, user } = await provision('client_token');
    const { token, expires_at } = await user.entitlementToken(organisation.id, 600);
    const jwksUrl = `${t.baseUrl}/.well-known/jwks.json`;
    const verified = await verifyEntitlements(token, jwksUrl);
    const read = await backEnd.entitlements(organisation.id);
    // Typed: the features and limits of the read, no usage.
    expect(verified).toMatchObject({ organisation_id: organisation.id, sub: organisation.id, tier: read.tier, features: read.features, version: read.version });
    const { limit, overage, source } = read.limits.projects;
    expect(verified.limits.projects).toEqual({ limit, overage, source });
    expect(verified.exp - verified.iat).toBe(600);
    expect(new Date(verified.exp * 1000).toISOString()).toBe(expires_at);
    // A self-hosted install keeps the key set beside its license file: no call at all.
    const keySet = await createClient({ baseUrl: t.baseUrl }).jwks();
    expect((await verifyEntitlements(token, keySet)).tier).toBe(read.tier);
    // Expired, altered or for another issuer: thrown.
    await expect(verifyEntitlements(token, keySet, { currentDate: new Date((verified.exp + 1) * 1000) })).rejects.toThrow(/exp/);
    const [header, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...verified, tier: 'enterprise' })).toString('base64url');
    await expect(verifyEntitlements(`${header}.${forged}.${signature}`, keySet)).rejects.toThrow(/signature/);
    await expect(verifyEntitlements(token, keySet, { issuer: 'https://elsewhere.example.com' })).rejects.toThrow(/iss/);
  });

  it('explains a license, typed: a free organisation has no subscription', async () => {
    const { backEnd, organisation, user } = await provision('client_explain');
    const explained = await backEnd.explain(organisation.id);
    expect(explained).toEqual({ tier: 'free', is_active: true, is_expired: false, plan_version: { version: 1, recorded_at: expect.any(String) }, because: [{ kind: 'no_subscription', reason: expect.any(String) }], grants: [] });
    const step = explained.because[0];
    // The steps are a union by `kind`: narrowing on it types the rest.
    expect(step.kind === 'no_subscription' ? step.reason : undefined).toMatch(/no subscription/);
    expect(await user.explain(organisation.id)).toEqual(explained);
  });

  it('lists the plan versions, previews a migration and starts and reads one, typed; the free tier is refused', async () => {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const plans = await backEnd.admin.plans.list();
    expect(plans.map((p) => [p.tier, p.versions.map((v) => v.version)])).toEqual([
      ['free', [1]],
      ['pro', [1]],
      ['team', [1]],
      ['enterprise', [1]],
    ]);
    const preview = await backEnd.admin.plans.previewMigration('pro', {}, { limit: 10 });
    expect(preview).toEqual({
      subscriptions: 0,
      summary: { features_gained: {}, features_lost: {}, limits_lowered: {}, over_new_limit: {}, price_changed: 0 },
      data: [],
      has_more: false,
    });
    const refused = await backEnd.admin.plans.previewMigration('free').catch((err: unknown) => err);
    expect(isServiceError(refused, 'invalid_tier')).toBe(true);
    // A migration with nothing to move ends as it starts; its read is the same.
    const started = await backEnd.admin.plans.startMigration('pro', { at: 'period_end' });
    expect(started).toMatchObject({ tier: 'pro', from_version: null, to_version: 1, at: 'period_end', status: 'done', total: 0, done: 0, failed: 0, errors: [] });
    expect(await backEnd.admin.plans.migration(started.id)).toEqual(started);
    const free = await backEnd.admin.plans.startMigration('free', { at: 'now' }).catch((err: unknown) => err);
    expect(isServiceError(free, 'invalid_tier')).toBe(true);
  });
});

/** The subscription functions, against the service on the strict provider double (spec §11.4). */
describe('packages/client: the subscription and its changes', () => {
  let fake: FakeProvider;
  let t: TestApp;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    t = await startSubscriptionApp(fake);
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('reads, previews and upgrades with the preview\'s proration_date, schedules a downgrade, releases it, cancels and resumes', async () => {
    const s = await subscribed(t, fake, { price: 'team_month', seats: 3 });
    const user = createClient({ baseUrl: t.baseUrl, session: s.owner.token });
    const organisation_id = s.org.id;
    expect((await user.subscription(organisation_id)).subscription).toMatchObject({ tier: 'team', seats: 3, pending_change: null });

    const preview = await user.previewChange({ organisation_id, seats: 4 });
    expect(preview.amount_due).toBe(preview.lines.reduce((sum, line) => sum + line.amount, 0));
    const upgraded = await user.changeSubscription({ organisation_id, seats: 4, proration_date: preview.proration_date });
    expect(upgraded.subscription).toMatchObject({ seats: 4, pending_change: null });

    const downgraded = await user.changeSubscription({ organisation_id, seats: 3 });
    expect(downgraded.subscription?.pending_change).toEqual({ tier: 'team', interval: 'month', seats: 3, effective_at: s.periodEnd });
    await user.releasePendingChange(organisation_id);
    expect((await user.subscription(organisation_id)).subscription?.pending_change).toBeNull();

    expect((await user.cancel(organisation_id)).subscription?.cancel_at_period_end).toBe(true);
    expect((await user.resume(organisation_id)).subscription?.cancel_at_period_end).toBe(false);

    const same = await user.changeSubscription({ organisation_id, seats: 4 }).catch((err: unknown) => err);
    expect(isServiceError(same, 'no_change') && same.status).toBe(400);
    const none = await user.releasePendingChange(organisation_id).catch((err: unknown) => err);
    expect(isServiceError(none, 'no_pending_change') && none.status).toBe(404);
  });
});

/** Credit packs through the client, against the built-in sandbox (spec §16.3). */
describe('packages/client: credit packs', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: packsTiersFile() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists the packs, buys some and reads the paid session back with its pack, typed', async () => {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const organisation = await backEnd.admin.createOrganisation({ name: 'Pack buyer', external_id: 'client_packs' });
    const owner = await backEnd.admin.createUser({ email: 'client_packs@example.com' });
    await backEnd.admin.putMember(organisation.id, owner.id, { role: 'owner' });
    const user = createClient({ baseUrl: t.baseUrl, session: (await backEnd.admin.createSession({ user_id: owner.id })).token });

    const { credit_packs } = await createClient({ baseUrl: t.baseUrl }).plans();
    expect(credit_packs.map((p) => `${p.pack} ${p.amount} ${p.prices[0].unit_amount} ${p.prices[0].interval}`)).toEqual([
      'tokens_1m 1000000 1000 null',
      'tokens_5m 5000000 1000 null',
    ]);
    const checkout = await user.buyCredits({ organisation_id: organisation.id, pack: credit_packs[0].pack, quantity: 2 });
    // The sandbox's checkout page, paid as a buyer would.
    const paid = await fetch(`${t.baseUrl}${new URL(checkout.url).pathname}/pay`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ total: '2000' }) });
    expect(paid.status).toBe(303);
    const session = await user.checkoutSession(checkout.session_id);
    expect(session).toMatchObject({ tier: null, pack: 'tokens_1m', quantity: 2, amount_total: 2000, currency: 'EUR' });

    const refused = await user.buyCredits({ organisation_id: organisation.id, pack: 'nope' }).catch((err: unknown) => err);
    expect(isServiceError(refused, 'invalid_pack') && refused.status).toBe(400);
  });
});

/** Credits through the client (spec §16.2): the operator grants and voids, members read balances and the ledger. */
describe('packages/client: credits', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('grants, reads the balance and the ledger, voids, and throws the typed codes', async () => {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const organisation = await backEnd.admin.createOrganisation({ name: 'Credits buyer', external_id: 'client_credits' });
    const owner = await backEnd.admin.createUser({ email: 'client_credits@example.com' });
    await backEnd.admin.putMember(organisation.id, owner.id, { role: 'owner' });
    const user = createClient({ baseUrl: t.baseUrl, session: (await backEnd.admin.createSession({ user_id: owner.id })).token });

    const grant = await backEnd.admin.credits.grant(organisation.id, { metric: 'ai_tokens', amount: 500, idempotency_key: 'welcome', note: 'Welcome' });
    expect(grant).toMatchObject({ metric: 'ai_tokens', amount: 500, remaining: 500, category: 'promotional', source: 'admin', note: 'Welcome' });
    expect(await backEnd.admin.credits.grant(organisation.id, { metric: 'ai_tokens', amount: 500, idempotency_key: 'welcome', note: 'Welcome' })).toEqual(grant);
    const conflict = await backEnd.admin.credits.grant(organisation.id, { metric: 'ai_tokens', amount: 5, idempotency_key: 'welcome' }).catch((err: unknown) => err);
    expect(isServiceError(conflict, 'idempotency_conflict') && conflict.status).toBe(409);

    await backEnd.reportUsage({ organisation_id: organisation.id, metric: 'ai_tokens', amount: 150 });
    const { data } = await user.credits(organisation.id);
    expect(data.map((m) => [m.metric, m.included.remaining, m.balance, m.available, m.grants.length])).toEqual([
      ['ai_tokens', 0, 450, 450, 1],
      ['gpu_s', 10, 0, 10, 0],
    ]);
    const ledger = await user.creditLedger({ organisation_id: organisation.id, metric: 'ai_tokens', limit: 1 });
    expect(ledger.has_more).toBe(true);
    expect(ledger.data.map((e) => [e.kind, e.amount, e.balance_after])).toEqual([['consume', -50, 450]]);

    expect(await backEnd.admin.credits.void(organisation.id, grant.id)).toMatchObject({ id: grant.id, remaining: 0 });
    expect((await user.credits(organisation.id)).data[0].balance).toBe(0);
    const refused = await backEnd.admin.credits.grant(organisation.id, { metric: 'projects', amount: 5, idempotency_key: 'x' }).catch((err: unknown) => err);
    expect(isServiceError(refused, 'invalid_credit_metric') && refused.status).toBe(400);
  });

  it('saves, reads and removes an automatic top-up, typed; 409 no_payment_method before a card is saved', async () => {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const organisation = await backEnd.admin.createOrganisation({ name: 'Recharging', external_id: 'client_recharge' });
    const owner = await backEnd.admin.createUser({ email: 'client_recharge@example.com' });
    await backEnd.admin.putMember(organisation.id, owner.id, { role: 'owner' });
    const user = createClient({ baseUrl: t.baseUrl, session: (await backEnd.admin.createSession({ user_id: owner.id })).token });
    const setting = { organisation_id: organisation.id, metric: 'ai_tokens' as const, pack: 'tokens_1k', threshold: 200, monthly_limit: 3 };

    const noCard = await user.saveAutoRecharge(setting).catch((err: unknown) => err);
    expect(isServiceError(noCard, 'no_payment_method') && noCard.status).toBe(409);
    // A pack paid on the sandbox's checkout page saves the card.
    const checkout = await user.buyCredits({ organisation_id: organisation.id, pack: 'tokens_1k' });
    const page = await (await fetch(`${t.baseUrl}${new URL(checkout.url).pathname}`)).text();
    const total = /name="total" value="(\d+)"/.exec(page)![1];
    expect((await fetch(`${t.baseUrl}${new URL(checkout.url).pathname}/pay`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ total }) })).status).toBe(303);

    const saved = await user.saveAutoRecharge(setting);
    expect(saved).toEqual({ metric: 'ai_tokens', pack: 'tokens_1k', threshold: 200, monthly_limit: 3, enabled: true, recharges_this_month: 0, last_error: null });
    expect((await user.credits(organisation.id)).data[0].auto_recharge).toEqual(saved);
    await user.deleteAutoRecharge(organisation.id, 'ai_tokens');
    expect((await user.credits(organisation.id)).data[0].auto_recharge).toBeNull();
  });

  it('reserves, commits and releases usage, and throws the typed codes', async () => {
    const backEnd = createClient({ baseUrl: t.baseUrl, serviceKey: KEY });
    const organisation = await backEnd.admin.createOrganisation({ name: 'Reserving', external_id: 'client_reservations' });
    const hold = await backEnd.reserveUsage({ organisation_id: organisation.id, metric: 'ai_tokens', amount: 80, ttl_s: 60 });
    expect(hold).toMatchObject({ organisation_id: organisation.id, metric: 'ai_tokens', amount: 80 });
    const tooMuch = await backEnd.reserveUsage({ organisation_id: organisation.id, metric: 'ai_tokens', amount: 21 }).catch((err: unknown) => err);
    expect(isServiceError(tooMuch, 'insufficient_credits') && tooMuch.status).toBe(402);
    const spent = await backEnd.commitReservation(hold.id, { amount: 50, organisation_id: organisation.id });
    expect(spent).toEqual({ metric: 'ai_tokens', used: 50, limit: 100, at_capacity: false, balance: 0, available: 50 });
    const again = await backEnd.releaseReservation(hold.id).catch((err: unknown) => err);
    expect(isServiceError(again, 'reservation_committed') && again.status).toBe(409);

    const other = await backEnd.reserveUsage({ organisation_id: organisation.id, metric: 'ai_tokens', amount: 10 });
    await backEnd.releaseReservation(other.id, organisation.id);
    await backEnd.releaseReservation(other.id);
    const unknown = await backEnd.commitReservation('00000000-0000-4000-8000-000000000000', { amount: 1 }).catch((err: unknown) => err);
    expect(isServiceError(unknown, 'reservation_not_found') && unknown.status).toBe(404);
  });
});
