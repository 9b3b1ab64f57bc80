import { creditsTiersFile, ledgerMismatches } from './support/credits';
import { cli } from './support/run-cli';
import { createOrganisation, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';

const HOUR = 3_600_000;

// credits:grant and credits:list (spec §16.6), the command line in-process on the test app's context.
describe('credits: the CLI', () => {
  let t: TestApp;
  let env: Record<string, string>;
  beforeAll(async () => {
    const tiers = creditsTiersFile();
    t = await startTestApp({ env: { TIERS_FILE: tiers } });
    env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, TIERS_FILE: tiers };
  });
  afterAll(() => t.close());

  const run = (args: string[]) => cli(args, env, { app: t.app });
  const written = async (org: string) => {
    const count = async (table: string) => ((await t.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE organisation_id = $1`, [org])) as { n: number }[])[0].n;
    return { grants: await count('credit_grants'), ledger: await count('credit_ledger'), audit: await count('audit_log') };
  };

  it('credits:grant gives a grant (audited, its ledger entry naming the operator); each run is a new one; credits:list shows it', async () => {
    const org = (await createOrganisation(t)).id;
    const expiresAt = new Date(Date.now() + 24 * HOUR).toISOString();
    const made = await run(['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '500', '--expires-at', expiresAt, '--note', 'Sorry for the outage']);
    expect(made.code).toBe(0);
    expect(made.json).toMatchObject({ metric: 'ai_tokens', amount: 500, remaining: 500, category: 'promotional', source: 'admin', expires_at: expiresAt, note: 'Sorry for the outage' });
    const grantId = (made.json as { id: string }).id;
    const [audit] = await t.db.query(`SELECT actor, action FROM audit_log WHERE organisation_id = $1`, [org]);
    expect(audit).toEqual({ actor: expect.stringMatching(/^cli:/), action: 'credit_grant.created' });
    const [entry] = await t.db.query(`SELECT kind, amount, reference FROM credit_ledger WHERE grant_id = $1`, [grantId]);
    expect(entry).toEqual({ kind: 'grant', amount: 500, reference: audit.actor });
    expect((await run(['credits:grant', '--org', org, '--metric', 'gpu_s', '--amount', '7'])).code).toBe(0);

    const listed = await run(['credits:list', '--org', org]);
    expect(listed.code).toBe(0);
    const { data, ledger } = listed.json as { data: { metric: string; balance: number; grants: { id: string }[] }[]; ledger: { kind: string }[] };
    expect(data.map((m) => [m.metric, m.balance, m.grants.length])).toEqual([
      ['ai_tokens', 500, 1],
      ['gpu_s', 7, 1],
    ]);
    expect(data[0].grants[0].id).toBe(grantId);
    expect(ledger.map((e) => e.kind)).toEqual(['grant', 'grant']);
    expect(await ledgerMismatches(t, org)).toEqual([]);
  });

  it('bad flags are refused before anything is written; refusals of the service exit 1, nothing written', async () => {
    const org = (await createOrganisation(t)).id;
    const usage = [
      ['credits:grant', '--metric', 'ai_tokens', '--amount', '5'],
      ['credits:grant', '--org', 'nope', '--metric', 'ai_tokens', '--amount', '5'],
      ['credits:grant', '--org', org, '--amount', '5'],
      ['credits:grant', '--org', org, '--metric', 'AI', '--amount', '5'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '0'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '1.5'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '1000000000001'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '5', '--expires-at', 'tomorrow'],
      ['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '5', '--note', 'x'.repeat(501)],
      ['credits:list'],
      ['credits:list', '--org', 'nope'],
    ];
    for (const args of usage) {
      const res = await run(args);
      expect({ args, code: res.code, stdout: res.stdout }).toEqual({ args, code: 2, stdout: '' });
    }
    const refused = [
      [['credits:grant', '--org', org, '--metric', 'projects', '--amount', '5'], /not a metric counted per billing period/],
      [['credits:grant', '--org', org, '--metric', 'ai_tokens', '--amount', '5', '--expires-at', new Date(Date.now() - HOUR).toISOString()], /expires_at must be in the future/],
      [['credits:grant', '--org', '00000000-0000-4000-8000-000000000000', '--metric', 'ai_tokens', '--amount', '5'], /organisation/i],
      [['credits:list', '--org', '00000000-0000-4000-8000-000000000000'], /organisation/i],
    ] as const;
    for (const [args, message] of refused) {
      const res = await run([...args]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(message);
    }
    expect(await written(org)).toEqual({ grants: 0, ledger: 0, audit: 0 });
  });
});
