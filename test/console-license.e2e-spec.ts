import { consoleCookie } from './support/console';
import { subscriptionEvent, subscriptionObject } from './support/provider-events';
import { requestStatements } from './support/statements';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { deliver } from './support/webhook-signing';

const DAY = 86_400;
const nowS = () => Math.floor(Date.now() / 1000);

/**
 * The console shows the license the service enforces, from the one implementation (licensing.license_state):
 * never a tier of its own choosing. The case that tells them apart: the newest subscription is past_due beyond
 * its grace while an older one is live. The license follows the live one.
 */
describe('the console’s tier is the license’s', () => {
  let t: TestApp;
  let cookie: string;
  beforeAll(async () => {
    t = await startTestApp();
    cookie = await consoleCookie(t);
  });
  afterAll(() => t.close());

  it('an organisation whose newest subscription is past grace while an older one is live: pro on the overview and its page, as its license', async () => {
    const org = (await createOrganisation(t, 'Grace Ltd')).id;
    const owner = await createUserWithSession(t, { org, role: 'owner' });
    const server = t.app.getHttpServer();
    const older = subscriptionObject({ organisationId: org, tier: 'pro', status: 'active' });
    const newer = subscriptionObject({ organisationId: org, tier: 'team', status: 'active', customer: older.customer });
    // The newer one became past_due ten days ago: beyond the default grace of 7 days. Its events are newer than the older's.
    for (const [event, created] of [
      [subscriptionEvent('created', older), nowS() - 40 * DAY],
      [subscriptionEvent('created', newer), nowS() - 20 * DAY],
      [subscriptionEvent('updated', { ...newer, status: 'past_due' }), nowS() - 10 * DAY],
    ] as const) {
      expect((await deliver(server, { ...event, created })).status).toBe(200);
    }

    const { body: status } = await t.http().get(`/api/licensing/status?organisation_id=${org}`).set(owner.auth).expect(200);
    expect(status.license).toEqual({ tier: 'pro', is_active: true, is_expired: false });

    const overview = await t.http().get('/console').set('Cookie', cookie).expect(200);
    const cards = [...overview.text.matchAll(/<span class="figure">(\d+)<\/span> on ([a-z_]+)<\/div>/g)].map(([, count, tier]) => ({ tier, count: Number(count) }));
    expect(cards).toEqual([{ tier: 'pro', count: 1 }]);

    const page = await t.http().get(`/console/organisations/${org}`).set('Cookie', cookie).expect(200);
    expect(/id="license-tier">([a-z_]+)</.exec(page.text)?.[1]).toBe(status.license.tier);
    // Its subscriptions as they are: the team one past due, with the end of its grace.
    expect(page.text).toMatch(/past due since [^<]*, grace until /);
  });
  it('the overview reads every organisation’s license in one pass: each subscription once, not the license once per organisation', async () => {
    const server = t.app.getHttpServer();
    for (const tier of ['pro', 'team', 'enterprise']) {
      const org = (await createOrganisation(t, `One pass ${tier}`)).id;
      const event = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier, status: 'active' }));
      expect((await deliver(server, { ...event, created: nowS() })).status).toBe(200);
    }
    const statements = await requestStatements(server, () => t.http().get('/console').set('Cookie', cookie).expect(200));
    const byTier = statements.filter((q) => /\blicensing\./.test(q.text));
    expect(byTier).toHaveLength(1);
    const [{ 'QUERY PLAN': plan }] = await t.db.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${byTier[0].text}`, byTier[0].values as unknown[]);
    // Every node that reads the subscriptions, with how many times it ran.
    const reads: { node: string; loops: number }[] = [];
    const walk = (node: Record<string, unknown>) => {
      if (node['Relation Name'] === 'provider_subscriptions') reads.push({ node: String(node['Node Type']), loops: Number(node['Actual Loops']) });
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk(plan[0].Plan);
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.filter((r) => r.loops !== 1)).toEqual([]);
  });
});
