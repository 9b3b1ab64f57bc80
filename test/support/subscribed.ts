import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeProvider, fakeProviderEnv, startFakeProvider } from './fake-provider';
import { SPEC_PLAN_EXAMPLE } from './plan-examples';
import { providerId, subscriptionEvent, subscriptionObject } from './provider-events';
import { createOrganisation, createUserWithSession, startTestApp, TestApp, TestAppOptions } from './test-app';
import { deliver } from './webhook-signing';

/**
 * Subscriptions to change (spec §11.4), against the strict double: spec §11.1's plan table (pro; team per seat,
 * at most 500), pro sold monthly only, team monthly and yearly; an organisation subscribed through the
 * provider's own `customer.subscription.created`, as a checkout leaves it.
 */
export const PRICES = {
  pro_month: { unit_amount: 2000, interval: 'month' },
  team_month: { unit_amount: 1000, interval: 'month' },
  team_year: { unit_amount: 10000, interval: 'year' },
} as const;
export type PriceName = keyof typeof PRICES;

/** The strict double selling PRICES. */
export async function startSubscriptionDouble(): Promise<FakeProvider> {
  const fake = await startFakeProvider();
  for (const [id, p] of Object.entries(PRICES)) {
    fake.addPrice(id, { currency: 'usd', unit_amount: p.unit_amount, recurring: { interval: p.interval, interval_count: 1, meter: null, usage_type: 'licensed' } });
  }
  return fake;
}

/** An app selling PRICES through the double, and now the target of its events (`fake.webhookTarget` moves them). */
export async function startSubscriptionApp(fake: FakeProvider, opts: TestAppOptions = {}): Promise<TestApp> {
  const file = join(mkdtempSync(join(tmpdir(), 'plans-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
  const env = { ...fakeProviderEnv(fake, 2000), TIERS_FILE: file, PAYPROVIDER_PRICE_PRO: 'pro_month', PAYPROVIDER_PRICE_TEAM: 'team_month,team_year' };
  const t = await startTestApp({ ...opts, env: { ...env, ...opts.env } });
  fake.webhookTarget(t.baseUrl);
  return t;
}

const DAY = 86_400;

/**
 * An organisation with an owner, `members` members in all, and a live subscription of `price` × `seats` at the
 * provider (ten days into a 30-day period, or a year's for a yearly price), known to the service through its
 * signed creation event. The double's recorded requests are cleared.
 */
export async function subscribed(
  t: TestApp,
  fake: FakeProvider,
  opts: { price: PriceName; seats?: number; members?: number; automaticTax?: boolean },
) {
  const org = await createOrganisation(t);
  const owner = await createUserWithSession(t, { org: org.id, role: 'owner' });
  const customer = fake.addCustomer(providerId('cus'));
  const periodStart = Math.floor(Date.now() / 1000) - 10 * DAY;
  const periodEnd = periodStart + (PRICES[opts.price].interval === 'year' ? 365 : 30) * DAY;
  const sub = subscriptionObject({ organisationId: org.id, customer, price: opts.price, quantity: opts.seats ?? 1, periodStart, periodEnd });
  sub.items.data[0].price = structuredClone(fake.prices.get(opts.price));
  sub.automatic_tax = { enabled: opts.automaticTax ?? false, liability: null };
  sub.schedule = null;
  sub.pending_update = null;
  fake.addSubscription(sub);
  await deliver(t.app.getHttpServer(), subscriptionEvent('created', sub, { created: periodStart })).expect(200);
  // Members after the subscription: the free tier's limit would refuse them before.
  for (let i = 1; i < (opts.members ?? 1); i++) await createUserWithSession(t, { org: org.id, role: 'member' });
  fake.requests.length = 0;
  return { org, owner, customer, subscriptionId: sub.id as string, periodStart, periodEnd, provider: () => fake.subscriptions.get(sub.id)! };
}

export const auditOf = (t: TestApp, organisationId: string) =>
  t.db.query(`SELECT action, actor, before, after FROM audit_log WHERE organisation_id = $1 AND action LIKE 'subscription.%' ORDER BY id`, [
    organisationId,
  ]);
