import { IdentityService } from '../src/identity/identity.service';
import { setLicense } from './licensing-fixtures';
import { cli } from './support/run-cli';
import { createOrganisation, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';

// The CLI's command line in-process, on the test app's context; test/cli.e2e-spec.ts runs the real process.
describe('member:add within the users limit', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    t = await startTestApp();
    env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
  });
  afterAll(() => t.close());

  let n = 0;
  const newUser = async () => (await t.app.get(IdentityService).createUser(`cli-limit-${++n}-${Date.now()}@example.com`)).id;
  const members = async (org: string) =>
    (await t.db.query(`SELECT user_id, role FROM memberships WHERE organisation_id = $1 ORDER BY user_id`, [org])) as {
      user_id: string;
      role: string;
    }[];
  const addMember = (org: string, user: string, role = 'member') =>
    cli(['member:add', '--org', org, '--user', user, '--role', role], env, { app: t.app });

  it('refuses a member beyond the free limit (3), keeps role changes possible, and allows more on a paid tier', async () => {
    const org = (await createOrganisation(t)).id;
    const users = [await newUser(), await newUser(), await newUser(), await newUser()];
    for (const user of users.slice(0, 3)) expect((await addMember(org, user)).code).toBe(0);

    const refused = await addMember(org, users[3]);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/already has 3 users, the limit of 3 in force \(tier free\)/);
    const before = await members(org);
    expect(before).toHaveLength(3);

    // An existing member's role can always change, even at capacity.
    const promoted = await addMember(org, users[0], 'admin');
    expect(promoted.code).toBe(0);
    expect(promoted.json).toEqual({ organisation_id: org, user_id: users[0], role: 'admin' });
    expect(await members(org)).toContainEqual({ user_id: users[0], role: 'admin' });

    await setLicense(t, org, { tier: 'pro', status: 'active' });
    expect((await addMember(org, users[3])).code).toBe(0);
    expect(await members(org)).toHaveLength(4);
  });

  it('a lapsed paid license enforces the free limit, and says so', async () => {
    const org = (await createOrganisation(t)).id;
    for (let i = 0; i < 3; i++) await t.app.get(IdentityService).addMember(org, await newUser(), 'member');
    await setLicense(t, org, { tier: 'pro', status: 'unpaid' });
    const refused = await addMember(org, await newUser());
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/tier pro, not active: free limits apply/);
    expect(await members(org)).toHaveLength(3);
  });

  it('two simultaneous additions for the last seat: exactly one succeeds', async () => {
    const org = (await createOrganisation(t)).id;
    for (let i = 0; i < 2; i++) await t.app.get(IdentityService).addMember(org, await newUser(), 'member');
    const results = await Promise.all([addMember(org, await newUser()), addMember(org, await newUser())]);
    expect(results.map((r) => r.code === 0).sort()).toEqual([false, true]);
    expect(await members(org)).toHaveLength(3);
  });

  it('an unknown organisation fails with a message and exit code 1', async () => {
    const res = await addMember('00000000-0000-4000-8000-000000000000', await newUser());
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/No organisation with id/);
  });
});
