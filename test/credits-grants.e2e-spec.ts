import { CreditsService, GrantInput } from '../src/credits/credits.service';
import { transaction } from '../src/database/transaction';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

/**
 * The one grant function and the automatic top-up's settings and settlement (spec §16.1, §16.4), as the purchase
 * side calls them: in the caller's transaction, exactly once per (organisation, source, reference), also from two
 * instances at once.
 */
describe('credits: grants and automatic top-up settlement', () => {
  const secret = newNotifySecret();
  let receiver: NotificationReceiver;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    const env = { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret };
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
    await receiver.close();
  });

  const credits = (t: TestApp) => t.app.get(CreditsService);
  const grant = (t: TestApp, input: GrantInput) => transaction(t.db, (m) => credits(t).grant(m, input));
  const rows = (sql: string, values: unknown[]) => a.db.query(sql, values);
  const base = (org: string, more: Partial<GrantInput> = {}): GrantInput => ({
    organisationId: org,
    metric: 'ai_tokens',
    amount: 1000,
    category: 'paid',
    source: 'top_up',
    reference: 'cs_test_one',
    ...more,
  });

  it('a grant writes the grant, its ledger entry and one credits.granted; the same reference again answers it, created false, and writes nothing', async () => {
    const org = (await createOrganisation(a)).id;
    const first = await grant(a, base(org, { expiresAt: new Date(Date.now() + 86_400_000), note: 'pack' }));
    expect(first.created).toBe(true);
    expect(first.grant).toMatchObject({ metric: 'ai_tokens', amount: 1000, remaining: 1000, category: 'paid', priority: 50, source: 'top_up', note: 'pack', voided_at: null });
    const again = await grant(a, base(org, { amount: 5 }));
    expect(again).toEqual({ grant: first.grant, created: false });

    expect(await rows(`SELECT kind, amount, grant_id, balance_after, reference FROM credit_ledger WHERE organisation_id = $1`, [org])).toEqual([
      { kind: 'grant', amount: 1000, grant_id: first.grant.id, balance_after: 1000, reference: 'cs_test_one' },
    ]);
    const [message] = await waitFor('credits.granted', () => receiver.accepted(org).length >= 1 && receiver.accepted(org));
    expect(message.json).toMatchObject({
      type: 'credits.granted',
      data: { organisation_id: org, tier: 'free', metric: 'ai_tokens', grant_id: first.grant.id, amount: 1000, category: 'paid', source: 'top_up', balance: 1000, version: 1 },
    });
    expect(await rows(`SELECT count(*)::int AS n FROM notification_messages WHERE organisation_id = $1`, [org])).toEqual([{ n: 1 }]);
  });

  it('twenty grants of one reference at once from two instances make one grant, one ledger entry and one message', async () => {
    const org = (await createOrganisation(a)).id;
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => grant(i % 2 ? a : b, base(org, { reference: 'in_race' }))));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.grant.id)).size).toBe(1);
    expect(await rows(`SELECT count(*)::int AS n FROM credit_grants WHERE organisation_id = $1`, [org])).toEqual([{ n: 1 }]);
    expect(await rows(`SELECT count(*)::int AS n FROM credit_ledger WHERE organisation_id = $1`, [org])).toEqual([{ n: 1 }]);
    expect(await rows(`SELECT count(*)::int AS n FROM notification_messages WHERE organisation_id = $1`, [org])).toEqual([{ n: 1 }]);
  });

  it('the balance after a grant counts only the grants in force: one effective later or another metric adds nothing', async () => {
    const org = (await createOrganisation(a)).id;
    await grant(a, base(org, { reference: 'r1', amount: 300 }));
    const later = await grant(a, base(org, { reference: 'r2', amount: 50, effectiveAt: new Date(Date.now() + 3_600_000) }));
    expect(later.grant.effective_at > new Date().toISOString()).toBe(true);
    const ledger = await rows(`SELECT amount, balance_after FROM credit_ledger WHERE organisation_id = $1 ORDER BY id`, [org]);
    expect(ledger).toEqual([
      { amount: 300, balance_after: 300 },
      { amount: 50, balance_after: 300 },
    ]);
  });

  it.each([
    ['a metric not counted per period', { metric: 'projects' }, 'invalid_credit_metric'],
    ['an unknown metric', { metric: 'gpu_seconds' }, 'invalid_credit_metric'],
    ['an amount of 0', { amount: 0 }, 'validation_failed'],
    ['a fractional amount', { amount: 1.5 }, 'validation_failed'],
    ['an amount above 10^12', { amount: 1e12 + 1 }, 'validation_failed'],
    ['an expiry in the past', { expiresAt: new Date(Date.now() - 1000) }, 'validation_failed'],
    ['an expiry before its start', { effectiveAt: new Date(Date.now() + 7_200_000), expiresAt: new Date(Date.now() + 3_600_000) }, 'validation_failed'],
    ['a priority of 0', { priority: 0 }, 'validation_failed'],
    ['a priority above 100', { priority: 101 }, 'validation_failed'],
    ['a note over 500 characters', { note: 'x'.repeat(501) }, 'validation_failed'],
    ['an empty reference', { reference: '' }, 'validation_failed'],
  ])('%s is refused (400) and writes nothing', async (_label, more, code) => {
    const org = (await createOrganisation(a)).id;
    await expect(grant(a, base(org, more as Partial<GrantInput>))).rejects.toMatchObject({ code });
    expect(await rows(`SELECT count(*)::int AS n FROM credit_grants WHERE organisation_id = $1`, [org])).toEqual([{ n: 0 }]);
    expect(await rows(`SELECT count(*)::int AS n FROM credit_ledger WHERE organisation_id = $1`, [org])).toEqual([{ n: 0 }]);
  });

  describe('automatic top-up', () => {
    const save = (org: string, more: Record<string, unknown> = {}) =>
      transaction(a.db, (m) => credits(a).saveAutoRecharge(m, { organisationId: org, metric: 'ai_tokens', pack: 'tokens_1m', threshold: 100, monthlyLimit: 3, ...more }));
    const pendingRecharge = async (org: string) =>
      (await rows(`INSERT INTO credit_recharges (organisation_id, metric, pack) VALUES ($1, 'ai_tokens', 'tokens_1m') RETURNING id`, [org]))[0].id as string;
    const settle = (t: TestApp, id: string, outcome: Parameters<CreditsService['settleRecharge']>[2]) =>
      transaction(t.db, (m) => credits(t).settleRecharge(m, id, outcome));

    it('saves, reads, turns off and deletes a setting; saving again turns it on and clears the error', async () => {
      const org = (await createOrganisation(a)).id;
      expect(await save(org)).toEqual({ metric: 'ai_tokens', pack: 'tokens_1m', threshold: 100, monthly_limit: 3, enabled: true, recharges_this_month: 0, last_error: null });
      await pendingRecharge(org);
      const off = await transaction(a.db, (m) => credits(a).disableAutoRecharge(m, org, 'ai_tokens', 'Your card was declined.'));
      expect(off).toMatchObject({ enabled: false, last_error: 'Your card was declined.', recharges_this_month: 1 });
      expect(await save(org, { threshold: 5 })).toMatchObject({ threshold: 5, enabled: true, last_error: null });
      await expect(save(org, { monthlyLimit: 101 })).rejects.toMatchObject({ code: 'validation_failed' });
      await expect(save(org, { metric: 'projects' })).rejects.toMatchObject({ code: 'invalid_credit_metric' });
      expect(await transaction(a.db, (m) => credits(a).deleteAutoRecharge(m, org, 'ai_tokens'))).toBe(true);
      expect(await transaction(a.db, (m) => credits(a).deleteAutoRecharge(m, org, 'ai_tokens'))).toBe(false);
      expect(await transaction(a.db, (m) => credits(a).autoRecharge(m, org, 'ai_tokens'))).toBeNull();
    });

    it('a paid recharge grants the pack once per invoice, from two instances at once; a failure after it changes nothing', async () => {
      const org = (await createOrganisation(a)).id;
      await save(org);
      const id = await pendingRecharge(org);
      const paid = { status: 'paid' as const, invoiceId: 'in_recharge_1', amount: 1_000_000, expiresAt: null };
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => settle(i % 2 ? a : b, id, paid)));
      expect(results.filter((r) => r!.grant!.created)).toHaveLength(1);
      expect(results[0]!.grant!.grant).toMatchObject({ source: 'auto_recharge', category: 'paid', amount: 1_000_000 });
      expect(await rows(`SELECT status, invoice_id FROM credit_recharges WHERE id = $1`, [id])).toEqual([{ status: 'paid', invoice_id: 'in_recharge_1' }]);
      expect(await rows(`SELECT source, reference FROM credit_grants WHERE organisation_id = $1`, [org])).toEqual([{ source: 'auto_recharge', reference: 'in_recharge_1' }]);
      await settle(a, id, { status: 'failed', error: 'late decline' });
      expect(await transaction(a.db, (m) => credits(a).autoRecharge(m, org, 'ai_tokens'))).toMatchObject({ enabled: true, last_error: null });
    });

    it('a declined recharge fails once: the setting off with the error and one credits.recharge_failed', async () => {
      const org = (await createOrganisation(a)).id;
      await save(org);
      const id = await pendingRecharge(org);
      await Promise.all([a, b, a].map((t) => settle(t, id, { status: 'failed', error: 'Your card was declined.', invoiceId: 'in_declined' })));
      expect(await rows(`SELECT status, invoice_id FROM credit_recharges WHERE id = $1`, [id])).toEqual([{ status: 'failed', invoice_id: 'in_declined' }]);
      expect(await transaction(a.db, (m) => credits(a).autoRecharge(m, org, 'ai_tokens'))).toMatchObject({ enabled: false, last_error: 'Your card was declined.', recharges_this_month: 0 });
      const [message] = await waitFor('credits.recharge_failed', () => receiver.accepted(org).length >= 1 && receiver.accepted(org));
      expect(message.json).toMatchObject({ type: 'credits.recharge_failed', data: { organisation_id: org, metric: 'ai_tokens', pack: 'tokens_1m', recharge_id: id, error: 'Your card was declined.' } });
      expect(await rows(`SELECT type FROM notification_messages WHERE organisation_id = $1`, [org])).toEqual([{ type: 'credits.recharge_failed' }]);
      // Paid later all the same (the customer paid the invoice another way): the pack is granted.
      const late = await settle(a, id, { status: 'paid', invoiceId: 'in_declined', amount: 10, expiresAt: null });
      expect(late!.grant!.created).toBe(true);
      expect(await settle(a, '00000000-0000-4000-8000-000000000000', { status: 'failed', error: 'x' })).toBeUndefined();
    });
  });
});
