import { randomUUID } from 'node:crypto';
import { IdentityService } from '../src/identity/identity.service';
import { consoleCookie, csrfOf } from './support/console';
import { creditsTiersFile, giveCredits, ledgerMismatches } from './support/credits';
import { startTestApp, TestApp } from './support/test-app';

/**
 * The console's credits (spec §16.6) over HTTP: the organisation page shows each credits metric (included,
 * balance, reserved, available, the grants in the order they are drawn on, the latest ledger entries) and gives
 * and voids grants through the credits module, audited as the operator; a refused action says why and changes
 * nothing; the same form sent twice gives one grant.
 */
describe('console: credits on the organisation page', () => {
  let t: TestApp;
  let cookie: string;

  beforeAll(async () => {
    t = await startTestApp({ env: { TIERS_FILE: creditsTiersFile() } });
    cookie = await consoleCookie(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string, expected = 200) => t.http().get(path).set('Cookie', cookie).expect(expected);
  const page = async (org: string) => (await get(`/console/organisations/${org}`)).text;
  const post = async (path: string, fields: Record<string, string>, csrf?: string) =>
    t.http().post(path).set('Cookie', cookie).type('form').send({ _csrf: csrf ?? csrfOf((await get('/console')).text), ...fields });
  /** The flash an action's redirect carries: [kind, text]. */
  const outcome = (res: { status: number; headers: Record<string, any> }) => {
    expect(res.status).toBe(303);
    const flash = JSON.parse(Buffer.from(/console_flash=([^;]+)/.exec(res.headers['set-cookie'][0])![1], 'base64url').toString('utf8'));
    return [flash.kind, flash.text];
  };
  const grantKeyOf = (html: string) => /name="idempotency_key" value="([^"]+)"/.exec(html)![1];
  const grants = (org: string) => t.db.query(`SELECT id, amount, remaining, category, source, note, voided_at FROM credit_grants WHERE organisation_id = $1 ORDER BY created_at`, [org]);
  const audits = (org: string) =>
    t.db.query(`SELECT action, actor FROM audit_log WHERE organisation_id = $1 AND action LIKE 'credit_grant.%' ORDER BY id`, [org]);

  it('shows included, balance, available and the grants in the order they are drawn on, with the latest ledger entries', async () => {
    const org = await t.app.get(IdentityService).createOrganisation('Credits Page Ltd');
    expect(await page(org.id)).toContain('No grants that count.');
    const later = await giveCredits(t, org.id, 300, { priority: 60 });
    const first = await giveCredits(t, org.id, 200, { priority: 10, category: 'promotional', source: 'admin', note: 'apology' });
    const html = await page(org.id);
    expect(html).toContain('<dt>Included this period</dt><dd>0 of 100 used, 100 left</dd>');
    expect(html).toContain('<dt>Balance</dt><dd>500</dd>');
    expect(html).toContain('<dt>Available</dt><dd><strong>600</strong></dd>');
    expect(html.indexOf(first.id)).toBeLessThan(html.indexOf(later.id));
    expect(html).toContain('<td data-label="Remaining">200 of 200</td>');
    expect(html).toContain('<td data-label="Kind">grant</td><td data-label="Amount">+300</td>');
    // The further credits metric of its tier has its own block.
    expect(html).toContain('<h3 id="credits-gpu_s">gpu_s</h3>');
  });

  it('gives a grant from the form, audited as the operator; the same form sent again gives nothing more', async () => {
    const org = await t.app.get(IdentityService).createOrganisation('Grant Form Ltd');
    const html = await page(org.id);
    const csrf = csrfOf(html);
    const fields = { metric: 'ai_tokens', amount: '2500', category: 'promotional', priority: '20', note: 'for the launch', idempotency_key: grantKeyOf(html) };
    expect(outcome(await post(`/console/organisations/${org.id}/credits/grants`, fields, csrf))).toEqual(['done', 'Granted 2500 ai_tokens (promotional).']);
    expect(outcome(await post(`/console/organisations/${org.id}/credits/grants`, fields, csrf))).toEqual([
      'done',
      'This form already granted 2500 ai_tokens (promotional); nothing more was given.',
    ]);
    expect(await grants(org.id)).toEqual([expect.objectContaining({ amount: 2500, remaining: 2500, category: 'promotional', source: 'admin', note: 'for the launch' })]);
    expect(await audits(org.id)).toEqual([{ action: 'credit_grant.created', actor: 'operator:ops@example.com' }]);
    expect(await page(org.id)).toContain('<dt>Balance</dt><dd>2,500</dd>');
    // A page shown again carries a new key: a second grant on purpose is a second grant.
    expect(grantKeyOf(await page(org.id))).not.toBe(fields.idempotency_key);
  });

  it('voids a grant: what was left written off, audited; voiding it again changes nothing', async () => {
    const org = await t.app.get(IdentityService).createOrganisation('Void Ltd');
    const grant = await giveCredits(t, org.id, 700);
    expect(outcome(await post(`/console/organisations/${org.id}/credits/grants/${grant.id}/void`, {}))).toEqual([
      'done',
      `Grant ${grant.id} voided: ai_tokens written off, nothing left of it.`,
    ]);
    const [voided] = await grants(org.id);
    expect(voided).toMatchObject({ remaining: 0, voided_at: expect.any(Date) });
    expect(await ledgerMismatches(t, org.id)).toEqual([]);
    expect(await page(org.id)).toContain('<td data-label="Kind">void</td><td data-label="Amount">-700</td>');
    await post(`/console/organisations/${org.id}/credits/grants/${grant.id}/void`, {});
    expect(await audits(org.id)).toEqual([{ action: 'credit_grant.voided', actor: 'operator:ops@example.com' }]);
  });

  it('refuses bad input with the reason and changes nothing: amount, metric, expiry, ids, another organisation\'s grant', async () => {
    const org = await t.app.get(IdentityService).createOrganisation('Refusals Ltd');
    const other = await t.app.get(IdentityService).createOrganisation('Someone Else Ltd');
    const theirs = await giveCredits(t, other.id, 50);
    const form = (more: Record<string, string>) => ({ metric: 'ai_tokens', amount: '10', idempotency_key: `k-${randomUUID()}`, ...more });
    const refusals: [string, Record<string, string>, RegExp][] = [
      [`/console/organisations/${org.id}/credits/grants`, form({ amount: '0' }), /amount must not be less than 1/],
      [`/console/organisations/${org.id}/credits/grants`, form({ amount: 'lots' }), /amount must be an integer/],
      [`/console/organisations/${org.id}/credits/grants`, form({ amount: '10000000000001' }), /amount must not be greater than/],
      [`/console/organisations/${org.id}/credits/grants`, form({ metric: 'projects' }), /per billing period|per period/],
      [`/console/organisations/${org.id}/credits/grants`, form({ priority: '101' }), /priority must not be greater than 100/],
      [`/console/organisations/${org.id}/credits/grants`, form({ category: 'free' }), /category must be one of/],
      [`/console/organisations/${org.id}/credits/grants`, form({ expires_at: '2001-01-01T00:00' }), /expires_at must be in the future/],
      [`/console/organisations/${org.id}/credits/grants`, form({ expires_at: 'soon' }), /not a date and time/],
      [`/console/organisations/not-a-uuid/credits/grants`, form({}), /No organisation with id not-a-uuid/],
      [`/console/organisations/${randomUUID()}/credits/grants`, form({}), /No organisation with id/],
      [`/console/organisations/${org.id}/credits/grants/${theirs.id}/void`, {}, /has no credit grant/],
      [`/console/organisations/${org.id}/credits/grants/12/void`, {}, /has no credit grant 12/],
    ];
    for (const [path, fields, why] of refusals) {
      const [kind, text] = outcome(await post(path, fields));
      expect([path, fields, kind, text]).toEqual([path, fields, 'refused', expect.stringMatching(why)]);
    }
    expect(await grants(org.id)).toEqual([]);
    expect((await grants(other.id))[0]).toMatchObject({ remaining: 50, voided_at: null });
    expect(await audits(org.id)).toEqual([]);
    expect(await audits(other.id)).toEqual([]);
  });

  it('an action without the CSRF token is refused (403) and gives nothing', async () => {
    const org = await t.app.get(IdentityService).createOrganisation('Csrf Ltd');
    const res = await t.http().post(`/console/organisations/${org.id}/credits/grants`).set('Cookie', cookie).type('form').send({ metric: 'ai_tokens', amount: '5', idempotency_key: 'x' });
    expect(res.status).toBe(403);
    expect(await grants(org.id)).toEqual([]);
  });
});
