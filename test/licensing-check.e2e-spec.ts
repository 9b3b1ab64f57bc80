import { randomUUID } from 'node:crypto';
import { errorBody, monthStartS, setLicense, setUsage } from './licensing-fixtures';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-check-key';

describe('GET /api/licensing/check', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY } });
  });
  afterAll(() => t.close());

  const check = (query: Record<string, unknown>, headers: Record<string, string>) =>
    t.http().get('/api/licensing/check').query(query).set(headers);

  async function orgWithMember() {
    const org = await createOrganisation(t);
    const member = await createUserWithSession(t, { org: org.id, role: 'member' });
    return { org: org.id, member };
  }

  it('a member: remaining capacity, amount defaulting to 1', async () => {
    const { org, member } = await orgWithMember();
    await setUsage(t, org, 'projects', 2);
    expect((await check({ organisation_id: org, metric: 'projects' }, member.auth).expect(200)).body).toEqual({
      allowed: true,
      used: 2,
      limit: 3,
      remaining: 1,
    });
    expect((await check({ organisation_id: org, metric: 'projects', amount: 2 }, member.auth).expect(200)).body).toEqual({
      allowed: false,
      used: 2,
      limit: 3,
      remaining: 1,
    });
  });

  it('users counts memberships; ai_tokens the current period; paid limits while active', async () => {
    const { org, member } = await orgWithMember();
    expect((await check({ organisation_id: org, metric: 'users', amount: 2 }, member.auth).expect(200)).body).toEqual({
      allowed: true,
      used: 1,
      limit: 3,
      remaining: 2,
    });
    await setLicense(t, org, { tier: 'pro', status: 'active', periodStart: monthStartS() - 86_400 });
    await setUsage(t, org, 'ai_tokens', 1_999_000, monthStartS() - 86_400);
    expect((await check({ organisation_id: org, metric: 'ai_tokens', amount: 1000 }, member.auth).expect(200)).body).toEqual({
      allowed: true,
      used: 1_999_000,
      limit: 2_000_000,
      remaining: 1000,
    });
  });

  it('remaining is 0, not negative, above the limit (after a downgrade)', async () => {
    const { org, member } = await orgWithMember();
    await setUsage(t, org, 'projects', 5);
    expect((await check({ organisation_id: org, metric: 'projects' }, member.auth).expect(200)).body).toEqual({
      allowed: false,
      used: 5,
      limit: 3,
      remaining: 0,
    });
  });

  it('a service key: any existing organisation; 404 for an unknown one', async () => {
    const { org } = await orgWithMember();
    const res = await check({ organisation_id: org, metric: 'projects' }, { 'X-Service-Key': KEY }).expect(200);
    expect(res.body).toEqual({ allowed: true, used: 0, limit: 3, remaining: 3 });
    const missing = await check({ organisation_id: randomUUID(), metric: 'projects' }, { 'X-Service-Key': KEY }).expect(404);
    expect(missing.body).toEqual(errorBody(404, 'organisation_not_found'));
  });

  it('403 for a non-member, the same for an organisation that does not exist', async () => {
    const { org } = await orgWithMember();
    const outsider = await createUserWithSession(t);
    const forbidden = await check({ organisation_id: org, metric: 'projects' }, outsider.auth).expect(403);
    const missing = await check({ organisation_id: randomUUID(), metric: 'projects' }, outsider.auth).expect(403);
    expect(forbidden.body).toEqual(errorBody(403, 'organisation_forbidden'));
    expect(missing.body).toEqual(forbidden.body);
  });

  it('401 without a session or key, with an unknown session, or with a wrong key (even beside a valid session)', async () => {
    const { org, member } = await orgWithMember();
    const query = { organisation_id: org, metric: 'projects' };
    expect((await check(query, {}).expect(401)).body).toEqual(errorBody(401, 'unauthenticated'));
    await check(query, { Authorization: 'Bearer unknown' }).expect(401);
    expect((await check(query, { 'X-Service-Key': 'wrong' }).expect(401)).body).toEqual(errorBody(401, 'invalid_service_key'));
    await check(query, { ...member.auth, 'X-Service-Key': 'wrong' }).expect(401);
  });

  it.each([
    ['missing organisation_id', 'metric=projects'],
    ['organisation_id twice', 'organisation_id=ORG&organisation_id=ORG&metric=projects'],
    ['unknown metric', 'organisation_id=ORG&metric=seats'],
    ['missing metric', 'organisation_id=ORG'],
    ['amount 0', 'organisation_id=ORG&metric=projects&amount=0'],
    ['negative amount', 'organisation_id=ORG&metric=projects&amount=-1'],
    ['fractional amount', 'organisation_id=ORG&metric=projects&amount=1.5'],
    ['amount in exponent notation', 'organisation_id=ORG&metric=projects&amount=1e3'],
    ['non-numeric amount', 'organisation_id=ORG&metric=projects&amount=abc'],
    ['huge amount', 'organisation_id=ORG&metric=projects&amount=1000000000001'],
    ['amount twice', 'organisation_id=ORG&metric=projects&amount=1&amount=2'],
    ['unknown parameter', 'organisation_id=ORG&metric=projects&foo=1'],
  ])('400 for %s', async (_label, query) => {
    const { org, member } = await orgWithMember();
    const res = await t.http().get(`/api/licensing/check?${query.replaceAll('ORG', org)}`).set(member.auth).expect(400);
    expect(res.body).toEqual(errorBody(400, 'validation_failed'));
  });
});
