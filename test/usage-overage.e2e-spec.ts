import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { counters, errorBody, setLicense } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-overage';
// free bills ai_tokens past 1000 and blocks projects past 3; pro the other way round.
const TIERS = {
  free: { projects: 3, ai_tokens: { limit: 1000, overage: 'bill' }, users: 3 },
  pro: { projects: { limit: 5, overage: 'bill' }, ai_tokens: { limit: 2000, overage: 'block' }, users: 10 },
};

function tiersFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'overage-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(TIERS));
  return file;
}

describe('overage policy (spec §13): bill accepts past the limit, block refuses', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: tiersFile() } });
  });
  afterAll(async () => {
    await t.close();
  });

  const report = (body: object) => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body);
  const batch = (events: object[]) => t.http().post('/api/licensing/usage/batch').set('X-Service-Key', KEY).send({ events });
  const check = (org: string, metric: string, amount: number) =>
    t.http().get('/api/licensing/check').query({ organisation_id: org, metric, amount }).set('X-Service-Key', KEY).expect(200);
  const tokens = (org: string, amount: number, idempotency_key?: string) => ({ organisation_id: org, metric: 'ai_tokens', amount, idempotency_key });
  const projects = (org: string, amount: number) => ({ organisation_id: org, metric: 'projects', amount });
  const newOrg = async () => (await createOrganisation(t)).id;

  it('a bill metric: 200 under and past its limit, with overage (0 under it), and the counter goes past the limit', async () => {
    const org = await newOrg();
    expect((await report(tokens(org, 600)).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 600, limit: 1000, at_capacity: false, overage: 0 });
    expect((await report(tokens(org, 400)).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 1000, limit: 1000, at_capacity: true, overage: 0 });
    expect((await report(tokens(org, 250)).expect(200)).body).toEqual({ metric: 'ai_tokens', used: 1250, limit: 1000, at_capacity: true, overage: 250 });
    expect(await counters(t, org)).toEqual([{ metric: 'ai_tokens', period_start: expect.any(Number), used: 1250 }]);
  });

  it('a block metric keeps 402 (no overage field on its answers), and nothing is recorded', async () => {
    const org = await newOrg();
    expect((await report(projects(org, 3)).expect(200)).body).toEqual({ metric: 'projects', used: 3, limit: 3, at_capacity: true });
    expect((await report(projects(org, 1)).expect(402)).body).toEqual(errorBody(402, 'limit_exceeded'));
    expect(await counters(t, org)).toEqual([{ metric: 'projects', period_start: 0, used: 3 }]);
  });

  it('the policy is the tier in force: pro bills projects and blocks ai_tokens; a lapsed pro license is back to free', async () => {
    const org = await newOrg();
    await setLicense(t, org, { tier: 'pro', status: 'active' });
    expect((await report(projects(org, 7)).expect(200)).body).toEqual({ metric: 'projects', used: 7, limit: 5, at_capacity: true, overage: 2 });
    await report(tokens(org, 2000)).expect(200);
    await report(tokens(org, 1)).expect(402);
    await setLicense(t, org, { tier: 'pro', status: 'unpaid' });
    // free: projects blocked at 3 (7 already), ai_tokens billed past 1000 (a new free period starts at 0).
    await report(projects(org, 1)).expect(402);
    expect((await report(tokens(org, 1500)).expect(200)).body).toMatchObject({ used: 1500, limit: 1000, overage: 500 });
  });

  it('a batch: the same answers per event, overage on bill metrics (also on 402 results of a block metric: absent)', async () => {
    const org = await newOrg();
    const res = await batch([tokens(org, 900), tokens(org, 300), projects(org, 4), projects(org, 2), tokens(org, 10)]).expect(200);
    expect(res.body.results).toEqual([
      { status: 200, used: 900, limit: 1000, at_capacity: false, overage: 0 },
      { status: 200, used: 1200, limit: 1000, at_capacity: true, overage: 200 },
      { status: 402, used: 0, limit: 3, at_capacity: false, code: 'limit_exceeded' },
      { status: 200, used: 2, limit: 3, at_capacity: false },
      { status: 200, used: 1210, limit: 1000, at_capacity: true, overage: 210 },
    ]);
    expect(await counters(t, org)).toEqual([
      { metric: 'ai_tokens', period_start: expect.any(Number), used: 1210 },
      { metric: 'projects', period_start: 0, used: 2 },
    ]);
  });

  it('a repeat with the same key gets the first answer, overage included, and counts once', async () => {
    const org = await newOrg();
    const first = await report(tokens(org, 1500, 'k-1')).expect(200);
    expect(first.body).toEqual({ metric: 'ai_tokens', used: 1500, limit: 1000, at_capacity: true, overage: 500 });
    expect((await report(tokens(org, 1500, 'k-1')).expect(200)).body).toEqual(first.body);
    expect((await batch([tokens(org, 1500, 'k-1')]).expect(200)).body.results).toEqual([{ status: 200, used: 1500, limit: 1000, at_capacity: true, overage: 500 }]);
    expect((await counters(t, org))[0].used).toBe(1500);
  });

  it('a check on a bill metric is allowed past the limit; on a block metric it is not', async () => {
    const org = await newOrg();
    await report(tokens(org, 1200)).expect(200);
    await report(projects(org, 3)).expect(200);
    expect((await check(org, 'ai_tokens', 500)).body).toEqual({ allowed: true, used: 1200, limit: 1000, remaining: 0 });
    expect((await check(org, 'projects', 1)).body).toEqual({ allowed: false, used: 3, limit: 3, remaining: 0 });
    expect((await check(org, 'users', 4)).body).toEqual({ allowed: false, used: 0, limit: 3, remaining: 3 });
  });

  it("the status read shows usage past the limit at capacity, in the seed's shape (no field added)", async () => {
    const org = await newOrg();
    const { auth } = await createUserWithSession(t, { org, role: 'owner' });
    await report(tokens(org, 1700)).expect(200);
    const res = await t.http().get('/api/licensing/status').query({ organisation_id: org }).set(auth).expect(200);
    expect(res.body).toEqual({
      license: { is_active: true, is_expired: false, tier: 'free' },
      usage: {
        projects: { used: 0, limit: 3, at_capacity: false },
        ai_tokens: { used: 1700, limit: 1000, at_capacity: true },
        users: { used: 1, limit: 3, at_capacity: false },
      },
    });
  });
});
