import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PlanMigrationsService } from '../src/licensing/plan-migrations.service';
import { setUsage } from './licensing-fixtures';
import { consoleCookie, csrfOf } from './support/console';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'console-plans-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

// The second table: pro's projects lowered (25 → 20), api_access taken from pro and sso given to it; sold at a new price.
const LOWERED = { ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 20, features: { sso: true } } };

/**
 * The console's plans page (spec §17) over HTTP: each tier's versions with their live subscriptions, the
 * migration preview's summary and first organisations, and the migrate button (CSRF, audited as the operator),
 * which starts the migration through the licensing module and shows its state; bad input refused, nothing started.
 */
describe('console: the plans page', () => {
  let fake: FakeProvider;
  let database: TestDatabase;
  let t: TestApp;
  let cookie: string;
  let over: Awaited<ReturnType<typeof subscribed>>;
  let other: Awaited<ReturnType<typeof subscribed>>;

  beforeAll(async () => {
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
    database = await createTestDatabase();
    t = await startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: tiersFile(SPEC_PLAN_EXAMPLE) } });
    over = await subscribed(t, fake, { price: 'pro_month' });
    other = await subscribed(t, fake, { price: 'pro_month' });
    await setUsage(t, over.org.id, 'projects', 22);
    await t.close();
    t = await startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: tiersFile(LOWERED), PAYPROVIDER_PRICE_PRO: 'pro_month_2' } });
    cookie = await consoleCookie(t);
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    await database.drop();
  });

  const get = (path: string, expected = 200) => t.http().get(path).set('Cookie', cookie).expect(expected);
  const post = (fields: Record<string, string>) => t.http().post('/console/plans/migrations').set('Cookie', cookie).type('form').send(fields);
  /** The flash an action's redirect carries: [kind, text]. */
  const outcome = (res: { status: number; headers: Record<string, any> }) => {
    expect(res.status).toBe(303);
    const flash = JSON.parse(Buffer.from(/console_flash=([^;]+)/.exec(res.headers['set-cookie'][0])![1], 'base64url').toString('utf8'));
    return [flash.kind, flash.text];
  };
  const started = async () => Number((await t.db.query(`SELECT count(*)::int AS n FROM plan_migrations`))[0].n);
  const audits = () => t.db.query(`SELECT action, actor, after FROM audit_log WHERE action = 'plan.migration_started' ORDER BY id`);

  it("lists each tier's versions with their live subscriptions, the newest marked, in the navigation as Plans", async () => {
    const html = (await get('/console/plans')).text;
    expect(html).toContain('<a href="/console/plans" aria-current="page">Plans</a>');
    expect(html).toContain('<h2 id="tier-pro">pro</h2>');
    const pro = html.slice(html.indexOf('<h2 id="tier-pro">'), html.indexOf('<h2 id="tier-team">'));
    expect(pro).toMatch(/<td data-label="Version">1<\/td><td data-label="Recorded">[^<]+<\/td><td data-label="Live subscriptions" class="num">2<\/td>/);
    expect(pro).toMatch(/<td data-label="Version">2 <span class="badge badge-active">newest<\/span><\/td><td data-label="Recorded">[^<]+<\/td><td data-label="Live subscriptions" class="num">0<\/td>/);
    // The preview's form offers the paid tiers with versions, not free.
    expect(html).toContain('<option>pro</option>');
    expect(html).not.toContain('<option>free</option>');
    expect(html).not.toContain('action="/console/plans/migrations"');
  });

  it("shows the preview's summary and first organisations by name, and the migrate form; nothing changes", async () => {
    const html = (await get('/console/plans?tier=pro')).text;
    expect(html).toContain('<dt>Subscriptions that would move</dt><dd><strong>2</strong></dd>');
    expect(html).toContain('<dt>Features gained</dt><dd>sso: 2</dd>');
    expect(html).toContain('<dt>Features lost</dt><dd>api_access: 2</dd>');
    expect(html).toContain('<dt>Limits lowered</dt><dd>projects: 2</dd>');
    expect(html).toContain('<dt>Over the new limit now</dt><dd>projects: 1</dd>');
    expect(html).toContain('<dt>Price changed</dt><dd>2</dd>');
    expect(html).toContain(`<a href="/console/organisations/${over.org.id}">${over.org.name}</a>`);
    expect(html).toContain(`<code class="id">${other.subscriptionId}</code>`);
    expect(html).toContain('<span class="field">projects</span>: 25 → 20, 22 used <span class="badge badge-failed">over</span>');
    expect(html).toContain('<form class="filters" method="post" action="/console/plans/migrations" aria-labelledby="migrate-heading">');
    expect(html).toContain('<input type="radio" name="at" value="period_end" checked>');
    expect(html).toContain('<button type="submit" class="primary">Migrate 2 subscriptions</button>');
    expect(html).toContain('<option selected>pro</option>');
    expect(await started()).toBe(0);
  });

  it('a preview the service refuses says why on the page; a malformed choice is a 400 page', async () => {
    expect((await get('/console/plans?tier=pro&to_version=9')).text).toContain('role="alert">Refused: to_version 9 is not a version of &quot;pro&quot;');
    expect((await get('/console/plans?tier=pro&from_version=2&to_version=1')).text).toContain('must be newer than from_version');
    expect((await get('/console/plans?tier=gold')).text).toContain('Refused: &quot;gold&quot; is not a tier with plan versions.');
    for (const query of ['tier=pro&from_version=abc', 'tier=PRO', 'tier=pro&to_version=0', 'tier=pro&tier=team', 'migration=42']) {
      expect((await get(`/console/plans?${query}`, 400)).text).toMatch(/role="alert">/);
    }
  });

  it('refuses a migration without the CSRF token, with a bad `at` or for the free tier: nothing started or audited', async () => {
    const csrf = csrfOf((await get('/console/plans?tier=pro')).text);
    const forged = await post({ tier: 'pro', at: 'now' }).expect(403);
    expect(forged.text).toContain('no valid security token (CSRF). Nothing was changed.');
    await post({ _csrf: csrf, tier: 'pro', at: 'tomorrow' }).expect(400);
    await post({ _csrf: csrf, at: 'now' }).expect(400);
    expect(outcome(await post({ _csrf: csrf, tier: 'free', at: 'now' }))).toEqual(['refused', expect.stringMatching(/^Refused: "free" has no subscriptions to migrate/)]);
    expect(outcome(await post({ _csrf: csrf, tier: 'pro', to_version: '7', at: 'now' }))).toEqual(['refused', expect.stringMatching(/to_version 7 is not a version/)]);
    expect(await started()).toBe(0);
    expect(await audits()).toEqual([]);
  });

  it('migrates at the period end from the form, audited as the operator, and shows the migration until it is done', async () => {
    const csrf = csrfOf((await get('/console/plans?tier=pro')).text);
    const res = await post({ _csrf: csrf, tier: 'pro', from_version: '', to_version: '', at: 'period_end' });
    expect(outcome(res)).toEqual(['done', 'Migration started: 2 pro subscriptions from every older version to version 2, each at the end of its current period.']);
    const id = /migration=([0-9a-f-]{36})/.exec(res.headers.location)![1];
    expect(res.headers.location).toBe(`/console/plans?tier=pro&migration=${id}`);
    expect(await audits()).toEqual([
      { action: 'plan.migration_started', actor: 'operator:ops@example.com', after: { migration_id: id, tier: 'pro', from_version: null, to_version: 2, at: 'period_end', total: 2 } },
    ]);
    const migrations = t.app.get(PlanMigrationsService);
    // Run by the job queue in the background (the migration's own spec tests the run): waited for, as long as it takes here.
    const done = await waitFor('the migration to end', async () => ((await migrations.get(id)).status !== 'running' ? migrations.get(id) : undefined), 120_000);
    const html = (await get(`/console/plans?tier=pro&migration=${id}`)).text;
    expect(html).toContain('<h2 id="migration-heading">Migration of pro</h2>');
    expect(html).toContain(`<dt>Moved</dt><dd>${done.done} of 2${done.failed ? `, ${done.failed} not moved` : ''}</dd>`);
    expect(html).toContain('every older version → version 2, at each period end');
    expect(html).toContain(`<code class="id">${id}</code>`);
  }, 180_000);
});
