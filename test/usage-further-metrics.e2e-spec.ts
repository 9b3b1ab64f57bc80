import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { counters, errorBody, setLicense } from './licensing-fixtures';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { createOrganisation, startTestApp, TestApp } from './support/test-app';

const KEY = 'svc-key-further-metrics';

function tiersFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'further-metrics-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(SPEC_PLAN_EXAMPLE));
  return file;
}

// spec §11.1: a tier table's further metrics (`storage_gb` here: 100 in team, 0 in the tiers that do not
// name it) are reported through the usage API like projects, may go down, and are checked and shown.
describe('further metrics of the tier table (spec §11.1) through the usage API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { SERVICE_API_KEYS: KEY, TIERS_FILE: tiersFile() } });
  });
  afterAll(async () => {
    await t.close();
  });

  const report = (body: object) => t.http().post('/api/licensing/usage').set('X-Service-Key', KEY).send(body);
  const batch = (events: object[]) => t.http().post('/api/licensing/usage/batch').set('X-Service-Key', KEY).send({ events });
  const check = (org: string, metric: string, amount = 1) =>
    t.http().get('/api/licensing/check').query({ organisation_id: org, metric, amount }).set('X-Service-Key', KEY);
  const storage = (org: string, amount: number) => ({ organisation_id: org, metric: 'storage_gb', amount });

  it('a team organisation reports storage_gb up and down against its limit (100), exactly as projects', async () => {
    const org = (await createOrganisation(t)).id;
    await setLicense(t, org, { tier: 'team', status: 'active' });
    expect((await report(storage(org, 60)).expect(200)).body).toEqual({ metric: 'storage_gb', used: 60, limit: 100, at_capacity: false });
    expect((await report(storage(org, 41)).expect(402)).body).toEqual(errorBody(402, 'limit_exceeded'));
    expect((await report(storage(org, -20)).expect(200)).body).toEqual({ metric: 'storage_gb', used: 40, limit: 100, at_capacity: false });
    expect((await batch([storage(org, 60), storage(org, 1), storage(org, -100)]).expect(200)).body.results).toEqual([
      { status: 200, used: 100, limit: 100, at_capacity: true },
      { status: 402, used: 100, limit: 100, at_capacity: true, code: 'limit_exceeded' },
      { status: 200, used: 0, limit: 100, at_capacity: false },
    ]);
    expect(await counters(t, org)).toEqual([{ metric: 'storage_gb', period_start: 0, used: 0 }]);
    expect((await check(org, 'storage_gb', 100).expect(200)).body).toEqual({ allowed: true, used: 0, limit: 100, remaining: 100 });
    expect((await check(org, 'storage_gb', 101).expect(200)).body).toMatchObject({ allowed: false });
  });

  it('a tier that does not name it has limit 0; the entitlements read shows what was used', async () => {
    const org = (await createOrganisation(t)).id;
    await report(storage(org, 1)).expect(402);
    expect(await counters(t, org)).toEqual([]);
    await setLicense(t, org, { tier: 'team', status: 'active' });
    await report(storage(org, 7)).expect(200);
    const { body } = await t.http().get('/api/licensing/entitlements').query({ organisation_id: org }).set('X-Service-Key', KEY).expect(200);
    expect(body.limits.storage_gb).toMatchObject({ used: 7, limit: 100, at_capacity: false });
  });

  it('a metric the table does not have, or users (counted from memberships), is refused with 400 and nothing recorded', async () => {
    const org = (await createOrganisation(t)).id;
    await setLicense(t, org, { tier: 'team', status: 'active' });
    for (const metric of ['bandwidth_gb', 'users', 'Storage_GB']) {
      expect((await report({ organisation_id: org, metric, amount: 1 }).expect(400)).body.code).toBe('validation_failed');
    }
    expect((await batch([{ organisation_id: org, metric: 'bandwidth_gb', amount: 1 }, storage(org, 2)]).expect(200)).body.results).toEqual([
      { status: 400, used: null, limit: null, at_capacity: null, code: 'validation_failed' },
      { status: 200, used: 2, limit: 100, at_capacity: false },
    ]);
    expect((await check(org, 'bandwidth_gb').expect(400)).body.code).toBe('validation_failed');
    expect((await check(org, 'users').expect(200)).body).toMatchObject({ allowed: true, limit: 500 });
    expect(await counters(t, org)).toEqual([{ metric: 'storage_gb', period_start: 0, used: 2 }]);
  });

  it("the API document names the running table's metrics and features", async () => {
    const { body } = await t.http().get('/api/docs-json').expect(200);
    expect(body.components.schemas.UsageReportBody.properties.metric.enum).toEqual(['projects', 'ai_tokens', 'storage_gb']);
    const checkMetric = body.paths['/api/licensing/check'].get.parameters.find((p: { name: string }) => p.name === 'metric');
    expect(checkMetric.schema.enum).toEqual(['projects', 'ai_tokens', 'users', 'storage_gb']);
    const { limits, features } = body.components.schemas.EntitlementsResponse.properties;
    expect(limits.required).toEqual(['projects', 'ai_tokens', 'users', 'storage_gb']);
    expect(limits.properties.storage_gb).toEqual({ $ref: '#/components/schemas/LimitEntitlement' });
    expect(features.required).toEqual(['api_access', 'audit_log']);
  });
});
