import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxStore } from '../src/sandbox/sandbox.store';
import { giveCredits, ledgerMismatches } from './support/credits';
import { cli } from './support/run-cli';
import { createOrganisation, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';

const APP = 'http://localhost:3000';
const KEY = 'svc-key-sandbox-credits';
const DAY = 86_400_000;

/** pro includes 1000 ai_tokens a period, then credits, and rolls up to 300 unused over. */
const TIERS = {
  tiers: {
    free: { projects: 3, ai_tokens: { limit: 100, overage: 'credits' }, users: 3 },
    pro: { projects: 25, ai_tokens: { limit: 1000, overage: 'credits', rollover: { max: 300 } }, users: 10 },
  },
};

/**
 * sandbox:advance and credits (spec §16.6): the test clock moves the subscription's periods ahead of real time;
 * the organisation's credits follow it: the period's rollover is made and counts at once, grants expired by the
 * clock are written off, grants started by it count.
 */
describe('sandbox:advance: rollovers and expiries happen as the clock passes them', () => {
  let t: TestApp;
  const env = { PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };

  beforeAll(async () => {
    const tiersFile = join(mkdtempSync(join(tmpdir(), 'sandbox-credits-')), 'tiers.json');
    writeFileSync(tiersFile, JSON.stringify(TIERS));
    t = await startTestApp({ env: { APP_URL: APP, TIERS_FILE: tiersFile, SERVICE_API_KEYS: KEY } });
  });
  afterAll(() => t.close());

  async function buyPro(orgId: string): Promise<void> {
    const session = await t.app.get(SandboxStore).createCheckout({
      tier: 'pro',
      interval: 'month',
      quantity: 1,
      trialDays: 0,
      paymentMethodCollection: 'always',
      metadata: { organisation_id: orgId, tier: 'pro' },
      clientReferenceId: orgId,
      successUrl: `${APP}/billing/success`,
      cancelUrl: `${APP}/billing/cancel`,
    });
    await t.http().post(`/sandbox/checkout/${session.id}/pay`).type('form').send({ interval: 'month', seats: '1' }).expect(303);
  }
  const report = (org: string, amount: number) =>
    t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount });
  const credits = async (org: string) => (await t.http().get('/api/licensing/credits').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body.data[0];

  it('a month on: the unused allowance rolled over and counting, a grant expired by then written off, a grant starting by then in effect', async () => {
    const org = (await createOrganisation(t)).id;
    await buyPro(org);
    await report(org, 400).expect(200);
    const expiring = await giveCredits(t, org, 50, { expiresAt: new Date(Date.now() + 10 * DAY) });
    const later = await giveCredits(t, org, 70, { effectiveAt: new Date(Date.now() + 20 * DAY) });
    const lasting = await giveCredits(t, org, 20);
    expect(await credits(org)).toMatchObject({ included: { limit: 1000, used: 400, remaining: 600 }, balance: 70 });

    const res = await cli(['sandbox:advance', '--org', org, '--days', '31', '--url', `${t.baseUrl}/api/webhooks/payprovider`], env, { app: t.app });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.json.credits).toEqual({ rolled_over: 1, made_effective: 2, expired: 1 });

    // The new period: nothing used of it yet; 300 of last period's 600 unused rolled over, counting now.
    const read = await credits(org);
    expect(read).toMatchObject({ included: { limit: 1000, used: 0, remaining: 1000 }, balance: 390, available: 1390 });
    expect(read.grants.map((g: { source: string; amount: number }) => [g.source, g.amount]).sort()).toEqual([
      ['rollover', 300],
      ['top_up', 20],
      ['top_up', 70],
    ]);
    expect(read.grants.map((g: { id: string }) => g.id)).not.toContain(expiring.id);
    expect(read.grants.map((g: { id: string }) => g.id)).toEqual(expect.arrayContaining([later.id, lasting.id]));
    expect(await t.db.query(`SELECT kind, amount, reference FROM credit_ledger WHERE grant_id = $1 ORDER BY id`, [expiring.id])).toEqual([
      { kind: 'grant', amount: 50, reference: expect.any(String) },
      { kind: 'expire', amount: -50, reference: 'sandbox_clock' },
    ]);

    // Reports of the new period draw on them past the included amount.
    expect((await report(org, 1100).expect(200)).body).toMatchObject({ used: 1100, limit: 1000, balance: 290, available: 290 });
    expect(await ledgerMismatches(t, org)).toEqual([]);

    // Again with no time passing: nothing more happens.
    const again = await cli(['sandbox:advance', '--org', org, '--days', '0', '--url', `${t.baseUrl}/api/webhooks/payprovider`], env, { app: t.app });
    expect(again.json.credits).toEqual({ rolled_over: 0, made_effective: 0, expired: 0 });
  });
});
