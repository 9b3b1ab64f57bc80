import fc from 'fast-check';
import { licenseOf } from './support/license-state';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { deliver } from './support/webhook-signing';

type Kind = 'created' | 'updated' | 'deleted';
const RANK: Record<Kind, number> = { created: 1, updated: 2, deleted: 3 };
const TIERS = ['pro', 'team', 'enterprise'];
const STATUSES = ['active', 'trialing', 'past_due'];

interface Spec {
  kind: Kind;
  created: number;
  /** Distinguishes the events' data, so applying the wrong one shows. */
  n: number;
}

interface LicenseView {
  tier: string;
  subscription_id: string;
  subscription_status: string;
  current_period_start: number | null;
  current_period_end: number | null;
}

/**
 * The reference: apply the events sorted by (created, rank); nothing after a deletion (a deleted
 * subscription never comes back).
 */
function expected(specs: Spec[], subscriptionId: string): LicenseView {
  const sorted = [...specs].sort((a, b) => a.created - b.created || RANK[a.kind] - RANK[b.kind]);
  let state: LicenseView | undefined;
  for (const s of sorted) {
    state = s.kind === 'deleted'
      ? { tier: 'free', subscription_id: subscriptionId, subscription_status: 'canceled', current_period_start: null, current_period_end: null }
      : { tier: TIERS[s.n % 3], subscription_id: subscriptionId, subscription_status: STATUSES[s.n % 3], current_period_start: 10_000 + s.n, current_period_end: 20_000 + s.n };
    if (s.kind === 'deleted') break;
  }
  return state!;
}

const permutations = (xs: Spec[]): Spec[][] =>
  xs.length <= 1 ? [xs] : xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((p) => [x, ...p]));

describe('webhook ordering: the final license does not depend on delivery order', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** Delivers the events in the given order to a fresh organisation; returns its license. */
  async function run(order: Spec[]): Promise<{ license: LicenseView; subscriptionId: string }> {
    const org = (await createOrganisation(t)).id;
    const id = providerId('sub');
    const customer = providerId('cus');
    for (const s of order) {
      const sub = subscriptionObject({
        id,
        customer,
        organisationId: org,
        tier: TIERS[s.n % 3],
        status: STATUSES[s.n % 3],
        periodStart: 10_000 + s.n,
        periodEnd: 20_000 + s.n,
      });
      const res = await deliver(t.app.getHttpServer(), subscriptionEvent(s.kind, sub, { created: s.created }));
      expect(res.status).toBe(200);
      expect(['processed', 'stale']).toContain(res.body.status);
    }
    const { tier, subscription_id, subscription_status, current_period_start, current_period_end, deleted } = (await licenseOf(t, org))!;
    const license = deleted
      ? { tier, subscription_id, subscription_status: 'canceled', current_period_start: null, current_period_end: null }
      : { tier, subscription_id, subscription_status, current_period_start, current_period_end };
    return { license, subscriptionId: id };
  }

  it('every permutation of created, two updates and a deletion with clashing timestamps', async () => {
    // The deletion is older than one update and shares a second with the other: the tricky cases.
    const specs: Spec[] = [
      { kind: 'created', created: 100, n: 0 },
      { kind: 'updated', created: 100, n: 1 },
      { kind: 'updated', created: 300, n: 2 },
      { kind: 'deleted', created: 200, n: 3 },
    ];
    for (const order of permutations(specs)) {
      const { license, subscriptionId } = await run(order);
      expect(license).toEqual(expected(specs, subscriptionId));
      expect(license.tier).toBe('free');
    }
  }, 60_000);

  it('every permutation of created and three updates with clashing timestamps, no deletion: the newest wins', async () => {
    // Without a deletion to end them, every event older than the last applied must be refused as stale: the
    // update of second 200 arriving after the one of 300 must not bring back its plan, nor the created of second
    // 100 after the update of that second.
    const specs: Spec[] = [
      { kind: 'created', created: 100, n: 0 },
      { kind: 'updated', created: 100, n: 1 },
      { kind: 'updated', created: 300, n: 2 },
      { kind: 'updated', created: 200, n: 4 },
    ];
    for (const order of permutations(specs)) {
      const { license, subscriptionId } = await run(order);
      expect(license).toEqual(expected(specs, subscriptionId));
      expect(license.current_period_start).toBe(10_002);
    }
  }, 60_000);

  it('property: random timestamps, random extra updates, random order', async () => {
    const specsArb = fc
      .record({
        created: fc.integer({ min: 0, max: 6 }),
        updates: fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { maxLength: 3 }),
        deleted: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      })
      .map(({ created, updates, deleted }) => {
        const specs: Spec[] = [{ kind: 'created', created, n: 0 }];
        updates.forEach((c, i) => specs.push({ kind: 'updated', created: c, n: i + 1 }));
        if (deleted !== undefined) specs.push({ kind: 'deleted', created: deleted, n: 9 });
        return specs;
      })
      .chain((specs) => fc.tuple(fc.constant(specs), fc.shuffledSubarray(specs, { minLength: specs.length, maxLength: specs.length })));

    await fc.assert(
      fc.asyncProperty(specsArb, async ([specs, order]) => {
        const { license, subscriptionId } = await run(order);
        expect(license).toEqual(expected(specs, subscriptionId));
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
