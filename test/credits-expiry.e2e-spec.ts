import { CreditJobs } from '../src/credits/credit-jobs';
import { JobQueueTasks } from '../src/database/job-queue';
import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-credits-expiry';
const HOUR = 3_600_000;

/**
 * Expiry (spec §16.1): effective at `expires_at` in every read, report and check with no job; the minutely job then
 * writes each expired grant's `expire` entry once, whichever instance runs it and however often.
 */
describe('credits: expiry and its minutely job', () => {
  let a: TestApp;
  let b: TestApp;
  const env = { SERVICE_API_KEYS: KEY, TIERS_FILE: creditsTiersFile() };

  beforeAll(async () => {
    a = await startTestApp({ env });
    b = await startTestApp({ env, databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  const credits = async (org: string) => (await a.http().get('/api/licensing/credits').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200)).body.data[0];
  const expire = (grantId: string) =>
    a.db.query(`UPDATE credit_grants SET effective_at = now() - interval '2 hours', expires_at = now() - interval '1 second' WHERE id = $1`, [grantId]);

  it('runs as a minutely step of the job queue where the tier table sells credits', () => {
    expect(a.app.get(JobQueueTasks).users.some((u) => u.minutely !== undefined)).toBe(true);
  });

  it('an expired grant stops counting at once; the job writes its expire entry once, on any instance, however often it runs', async () => {
    const org = await (async () => (await createOrganisation(a)).id)();
    const lapsing = await giveCredits(a, org, 40, { expiresAt: new Date(Date.now() + HOUR) });
    const kept = await giveCredits(a, org, 25);
    await a.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount: 110 }).expect(200);
    // 10 drawn from the lapsing grant (it expires first), 30 left of it.
    await expire(lapsing.id);
    // No job yet: every read and check leaves it out.
    expect(await credits(org)).toMatchObject({ balance: 25, available: 25, grants: [{ id: kept.id, remaining: 25 }] });
    const check = await a.http().get('/api/licensing/check').query({ organisation_id: org, metric: 'ai_tokens', amount: 26 }).set('X-Service-Key', KEY).expect(200);
    expect(check.body.allowed).toBe(false);
    expect(await ledgerMismatches(a, org)).toEqual([]);
    expect((await a.db.query(`SELECT remaining FROM credit_grants WHERE id = $1`, [lapsing.id]))[0].remaining).toBe(30);

    // Both instances' jobs at once, and again: one entry.
    await Promise.all([a.app.get(CreditJobs).minutely(), b.app.get(CreditJobs).minutely()]);
    await a.app.get(CreditJobs).minutely();
    const entries = await a.db.query(`SELECT grant_id, amount, balance_after, reference FROM credit_ledger WHERE organisation_id = $1 AND kind = 'expire'`, [org]);
    expect(entries).toEqual([{ grant_id: lapsing.id, amount: -30, balance_after: 25, reference: null }]);
    expect((await a.db.query(`SELECT remaining FROM credit_grants WHERE id = $1`, [lapsing.id]))[0].remaining).toBe(0);
    expect(await ledgerMismatches(a, org)).toEqual([]);
    expect(await credits(org)).toMatchObject({ balance: 25, available: 25 });
    // The ledger read shows it, newest first.
    const ledger = await a.http().get('/api/licensing/credits/ledger').query({ organisation_id: org, limit: 1 }).set('X-Service-Key', KEY).expect(200);
    expect(ledger.body.data[0]).toMatchObject({ kind: 'expire', amount: -30, grant_id: lapsing.id, balance_after: 25 });
  });

  it('leaves voided, used-up and live grants alone, and marks lapsed reservations expired', async () => {
    const org = (await createOrganisation(a)).id;
    const voided = await giveCredits(a, org, 10, { expiresAt: new Date(Date.now() + HOUR) });
    await a.http().post(`/api/admin/organisations/${org}/credits/grants/${voided.id}/void`).set('X-Service-Key', KEY).expect(200);
    await expire(voided.id);
    const live = await giveCredits(a, org, 10, { expiresAt: new Date(Date.now() + HOUR) });
    const { body: hold } = await a.http().post('/api/licensing/usage/reservations').set('X-Service-Key', KEY).send({ organisation_id: org, metric: 'ai_tokens', amount: 5 }).expect(201);
    await a.db.query(`UPDATE usage_reservations SET expires_at = now() - interval '1 second' WHERE id = $1`, [hold.id]);
    await a.app.get(CreditJobs).minutely();
    expect(await a.db.query(`SELECT count(*)::int AS n FROM credit_ledger WHERE organisation_id = $1 AND kind = 'expire'`, [org])).toEqual([{ n: 0 }]);
    expect((await a.db.query(`SELECT remaining FROM credit_grants WHERE id = $1`, [live.id]))[0].remaining).toBe(10);
    expect((await a.db.query(`SELECT status FROM usage_reservations WHERE id = $1`, [hold.id]))[0].status).toBe('expired');
    // A lapsed reservation, marked or not, is committed as an ordinary report.
    const spent = await a.http().post(`/api/licensing/usage/reservations/${hold.id}/commit`).set('X-Service-Key', KEY).send({ amount: 5 }).expect(200);
    expect(spent.body).toMatchObject({ used: 5, expired: true });
    expect(await ledgerMismatches(a, org)).toEqual([]);
  });
});
