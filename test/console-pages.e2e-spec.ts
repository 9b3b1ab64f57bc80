import { randomUUID } from 'node:crypto';
import { IdentityService } from '../src/identity/identity.service';
import { consoleCookie, csrfOf } from './support/console';
import { providerId, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { licenseOf } from './support/license-state';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

/**
 * The operator console's pages and actions (spec §14) over HTTP: search, the organisation page, the event
 * ledger with replay, notifications with retry, reconciliation and the audit log; every action audited as
 * `operator:<email>`, refused ones saying why and changing nothing.
 */
describe('console pages and actions', () => {
  const secret = newNotifySecret();
  const PRICE = 'price_console_fixed';
  let receiver: NotificationReceiver;
  let t: TestApp;
  let cookie: string;

  beforeAll(async () => {
    receiver = await startReceiver(secret);
    // The price of the "fixed" configuration is unknown here: an event with it is stored failed.
    t = await startTestApp({ env: { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret } });
    cookie = await consoleCookie(t);
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const get = (path: string, expected = 200) => t.http().get(path).set('Cookie', cookie).expect(expected);
  const post = async (path: string, fields: Record<string, string> = {}) => {
    const csrf = csrfOf((await get('/console')).text);
    return t.http().post(path).set('Cookie', cookie).type('form').send({ _csrf: csrf, ...fields });
  };
  /** Follows an action's redirect: the page that shows its outcome. */
  const outcome = async (res: { status: number; headers: Record<string, any> }) => {
    expect(res.status).toBe(303);
    const flash = /console_flash=([^;]+)/.exec(res.headers['set-cookie'][0])![1];
    const page = await t.http().get(res.headers.location).set('Cookie', `${cookie}; console_flash=${flash}`).expect(200);
    return /<div class="flash flash-(done|refused)"[^>]*>([^<]*)</.exec(page.text)!.slice(1, 3);
  };
  const identity = () => t.app.get(IdentityService);

  it('finds organisations by part of the name, id, external id, member email, customer id and subscription id', async () => {
    const { record: org } = await identity().provisionOrganisation(t.db.manager, 'Findable Widgets Ltd', `ext-${randomUUID()}`);
    const user = await identity().createUser(`Finder.${Date.now()}@Example.com`);
    await identity().addMember(org.id, user.id, 'owner');
    const customer = providerId('cus');
    const sub = subscriptionObject({ organisationId: org.id, customer, tier: 'pro' });
    await deliver(t.app.getHttpServer(), subscriptionEvent('created', sub)).expect(200);
    for (const q of ['widgets', 'FINDABLE', org.id, org.external_id!, user.email.toUpperCase(), customer, sub.id]) {
      const page = await get(`/console/organisations?q=${encodeURIComponent(q)}`);
      expect([q, page.text.includes(`href="/console/organisations/${org.id}"`)]).toEqual([q, true]);
    }
    const none = await get(`/console/organisations?q=${encodeURIComponent('no such thing')}`);
    expect(none.text).not.toContain(org.id);
  });

  it("finds by part of a member's email, says which member matched, and asks for three characters before searching by part", async () => {
    const { record: org } = await identity().provisionOrganisation(t.db.manager, 'Quiet Holdings');
    const tag = randomUUID().slice(0, 8);
    const bob = await identity().createUser(`bob.${tag}@partial.example`);
    await identity().addMember(org.id, bob.id, 'admin');
    const found = (await get(`/console/organisations?q=${encodeURIComponent(`BOB.${tag}`)}`)).text;
    expect(found).toContain(`href="/console/organisations/${org.id}"`);
    expect(found).toContain(`<br><span class="muted">member <span class="nowrap">bob.${tag}@</span><wbr><span class="nowrap">partial.example</span></span>`);
    // Two characters: only exact look-ups, and the page says why nothing partial was looked for.
    const short = (await get('/console/organisations?q=Qu')).text;
    expect(short).not.toContain(org.id);
    expect(short).toContain('No organisation matches “Qu”. Type at least 3 characters to search by part of a name or email.');
    expect((await get('/console/organisations?q=Qui')).text).toContain(org.id);
  });

  it('pages through a partial search with more than 5,000 matches by name, as through a few', async () => {
    // 5,010 organisations whose owners' emails share a domain: more than the search collects and sorts, so it walks
    // the organisations by name instead; the pages are the same as a sort of every match would give. Made last name
    // first, so that the matches found first are not the first by name.
    const tag = randomUUID().slice(0, 8);
    await t.db.query(
      `WITH o AS (INSERT INTO organisations (name) SELECT 'Crowd ' || lpad(i::text, 4, '0') FROM generate_series(5010, 1, -1) AS i RETURNING id, name),
            u AS (INSERT INTO users (email) SELECT 'owner.' || substr(o.name, 7) || '@crowd-${tag}.example' FROM o RETURNING id, email)
       INSERT INTO memberships (organisation_id, user_id, role)
       SELECT o.id, u.id, 'owner' FROM o JOIN u ON u.email = 'owner.' || substr(o.name, 7) || '@crowd-${tag}.example'`,
    );
    const names = (text: string) => [...text.matchAll(/">(Crowd \d{4})<\/a>/g)].map((m) => m[1]);
    const first = await get(`/console/organisations?q=${encodeURIComponent(`@crowd-${tag}`)}`);
    expect(names(first.text)).toEqual(Array.from({ length: 50 }, (_, i) => `Crowd ${String(i + 1).padStart(4, '0')}`));
    const next = /href="(\/console\/organisations\?[^"]*after=[^"]+)">Next page/.exec(first.text)![1].replace(/&amp;/g, '&');
    expect(names((await get(next)).text)).toEqual(Array.from({ length: 50 }, (_, i) => `Crowd ${String(i + 51).padStart(4, '0')}`));
    // A few of them (the collected and sorted way): the same order.
    expect(names((await get(`/console/organisations?q=${encodeURIComponent(`owner.100`)}`)).text)).toEqual(Array.from({ length: 10 }, (_, i) => `Crowd 100${i}`));
  });

  it('escapes SQL and HTML in the search and in stored names, and takes LIKE wildcards literally', async () => {
    const evil = await identity().createOrganisation('<img src=x onerror=alert(1)> 100% Evil');
    await identity().createOrganisation('Plain Co');
    const [{ before }] = await t.db.query(`SELECT count(*)::int AS before FROM organisations`);
    for (const q of [`'; DROP TABLE organisations; --`, `' OR '1'='1`, '<script>alert(1)</script>', '\\', '_']) {
      const page = await get(`/console/organisations?q=${encodeURIComponent(q)}`);
      expect(page.text).not.toContain('<script>alert(1)</script>');
      expect(page.text).not.toContain('Plain Co');
    }
    const percent = await get(`/console/organisations?q=${encodeURIComponent('100%')}`);
    expect(percent.text).toContain(evil.id);
    expect(percent.text).toContain('&lt;img src=x onerror=alert(1)&gt; 100% Evil');
    expect(percent.text).not.toContain('<img src=x');
    expect((await get(`/console/organisations/${evil.id}`)).text).not.toContain('<img src=x');
    const [{ after }] = await t.db.query(`SELECT count(*)::int AS after FROM organisations`);
    expect(after).toBe(before);
    await get('/console/organisations?q=a&q=b', 400);
    await get('/console/organisations?after=not-a-cursor', 400);
  });

  it('pages through organisations by keyset, fifty at a time', async () => {
    const tag = `Keyset ${randomUUID().slice(0, 8)}`;
    for (let i = 0; i < 53; i++) await identity().createOrganisation(`${tag} ${String(i).padStart(2, '0')}`);
    const first = await get(`/console/organisations?q=${encodeURIComponent(tag)}`);
    expect(first.text.match(new RegExp(`${tag} \\d\\d`, 'g'))).toHaveLength(50);
    const next = /href="(\/console\/organisations\?[^"]*after=[^"]+)">Next page/.exec(first.text)![1].replace(/&amp;/g, '&');
    const second = await get(next);
    expect(second.text.match(new RegExp(`${tag} \\d\\d`, 'g'))).toEqual([`${tag} 50`, `${tag} 51`, `${tag} 52`]);
    expect(second.text).not.toContain('Next page');
  });

  it('shows one organisation: license, usage, subscriptions, members, events, notifications and audit trail', async () => {
    const { record: org } = await identity().provisionOrganisation(t.db.manager, 'Detail Ltd');
    const user = await identity().createUser(`detail.${Date.now()}@example.com`);
    await identity().addMember(org.id, user.id, 'admin');
    const sub = subscriptionObject({ organisationId: org.id, tier: 'pro', quantity: 3 });
    await deliver(t.app.getHttpServer(), subscriptionEvent('created', sub)).expect(200);
    const page = (await get(`/console/organisations/${org.id}`)).text;
    expect(page).toContain('<strong id="license-tier">pro</strong>');
    expect(page).toMatch(/<meter class="bar" min="0" max="\d+" value="1" aria-labelledby="usage-users">/);
    expect(page).toContain(sub.id);
    // The member's email, which may wrap only after its @ on a phone, and the user's id beside it.
    expect(page).toContain(`<span class="nowrap">${user.email.split('@')[0]}@</span><wbr><span class="nowrap">example.com</span><br><code class="id">${user.id}</code>`);
    // Its events by what they are, each linking to the event; the timeline says why, in sentences.
    const [{ id: eventId }] = await t.db.query(`SELECT id FROM webhook_events WHERE subscription_id = $1`, [sub.id]);
    expect(page).toContain(`<td data-label="Event">subscription created<br><a href="/console/events/${eventId}"><code>${eventId}</code></a></td>`);
    expect(page).toMatch(new RegExp(`<li>The license follows this subscription: pro active renewing \\d{1,2} [A-Z][a-z]{2} \\d{4} \\(tier from the price&#39;s metadata\\)\\. <a href="#sub-${sub.id}">subscription ${sub.id}</a></li>`));
    expect(page).toContain(`<tr id="sub-${sub.id}">`);
    expect(page).toContain('<td data-label="Plan">pro, monthly, 3 seats</td>');
    expect(page).toContain('license.updated');
    await get(`/console/organisations/${randomUUID()}`, 404);
    await get('/console/organisations/not-a-uuid', 404);
  });

  it('replays a failed event once the configuration is fixed, and refuses to replay a processed one', async () => {
    const org = await identity().createOrganisation('Replay Ltd');
    const sub = subscriptionObject({ organisationId: org.id, tierSource: 'none', price: PRICE });
    const event = subscriptionEvent('created', sub);
    expect((await deliver(t.app.getHttpServer(), event).expect(200)).body.status).toBe('failed');
    const listed = await get('/console/events?status=failed');
    expect(listed.text).toContain(event.id);
    const shown = await get(`/console/events/${event.id}`);
    expect(shown.text).toContain('Replay this event');
    expect(shown.text).toContain(`&quot;id&quot;: &quot;${event.id}&quot;`);

    // Still unresolvable here: replayed, still failed, said so.
    const [kind, text] = await outcome(await post(`/console/events/${event.id}/replay`));
    expect(kind).toBe('refused');
    expect(text).toMatch(/still failed \(tier_unresolvable/);

    // The operator fixes the configuration (the price is now pro's) and replays on the fixed instance.
    const fixed = await startTestApp({ databaseUrl: t.databaseUrl, env: { PAYPROVIDER_PRICE_PRO: PRICE } });
    try {
      const fixedCookie = await consoleCookie(fixed, 'fixer@example.com');
      const csrf = csrfOf((await fixed.http().get('/console').set('Cookie', fixedCookie).expect(200)).text);
      const res = await fixed.http().post(`/console/events/${event.id}/replay`).set('Cookie', fixedCookie).type('form')
        .send({ _csrf: csrf, back: `/console/organisations/${org.id}` }).expect(303);
      expect(res.headers.location).toBe(`/console/organisations/${org.id}`);
      expect(await licenseOf(fixed, org.id)).toMatchObject({ tier: 'pro', is_active: true });
      const [audit] = await t.db.query(`SELECT actor, organisation_id FROM audit_log WHERE action = 'event.replayed' AND actor = 'operator:fixer@example.com'`);
      expect(audit).toEqual({ actor: 'operator:fixer@example.com', organisation_id: org.id });

      const replayedAgain = await fixed.http().post(`/console/events/${event.id}/replay`).set('Cookie', fixedCookie).type('form').send({ _csrf: csrf }).expect(303);
      expect(replayedAgain.headers.location).toBe(`/console/events/${event.id}`);
    } finally {
      await fixed.close();
    }
    const [refused, why] = await outcome(await post(`/console/events/${event.id}/replay`));
    expect(refused).toBe('refused');
    expect(why).toMatch(/is processed; only a failed or unmatched event can be replayed/);
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM audit_log WHERE action = 'event.replayed' AND organisation_id = $1`, [org.id]);
    expect(count).toBe(2);
    expect((await outcome(await post('/console/events/evt_nope/replay', { back: '/console/events' })))[1]).toMatch(/there is no webhook event evt_nope/);
    await get('/console/events/evt_nope', 404);
  });

  it('filters webhook events by status, type and date, and pages them', async () => {
    await get('/console/events?status=nope', 400);
    await get('/console/events?from=yesterday', 400);
    const today = new Date().toISOString().slice(0, 10);
    const page = await get(`/console/events?status=processed&type=customer.subscription.created&from=${today}&to=${today}`);
    expect(page.text).toContain('customer.subscription.created');
    const old = await get('/console/events?to=2000-01-01');
    expect(old.text).toContain('No webhook events match these filters');
  });

  it('answers 400 saying so for an organisation filter that is not a UUID (36 zeros, 36 dashes), as for a UUID it has none of', async () => {
    for (const id of ['0'.repeat(36), '-'.repeat(36), `{${randomUUID()}}`, randomUUID().replace(/-/g, '')]) {
      const page = await get(`/console/events?organisation_id=${encodeURIComponent(id)}`, 400);
      expect(page.text).toContain('organisation_id must be a UUID.');
    }
    expect((await get(`/console/events?organisation_id=${randomUUID()}`)).text).toContain('No webhook events match these filters');
  });

  it('retries a failed notification, audited as the operator', async () => {
    const org = await identity().createOrganisation('Retry Ltd');
    await deliver(t.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: org.id, tier: 'pro' }))).expect(200);
    await waitFor('the notification to be delivered', async () => receiver.accepted(org.id).length === 1);
    const [{ id }] = await t.db.query(`SELECT id FROM notification_messages WHERE organisation_id = $1`, [org.id]);
    // As the outbox leaves a message whose deliveries gave up.
    await t.db.query(`UPDATE notification_deliveries SET status = 'failed', last_error = 'HTTP 500', next_attempt_at = NULL WHERE message_id = $1`, [id]);
    expect((await get('/console/notifications?status=failed')).text).toContain(id);
    const [kind, text] = await outcome(await post(`/console/notifications/${id}/retry`));
    expect([kind, text]).toEqual(['done', `Notification ${id} queued again for 1 URL.`]);
    await waitFor('the notification to be sent again', async () => receiver.accepted(org.id).length === 2);
    const [audit] = await t.db.query(`SELECT actor FROM audit_log WHERE action = 'notification.retried' AND organisation_id = $1`, [org.id]);
    expect(audit.actor).toBe('operator:ops@example.com');
    expect((await outcome(await post('/console/notifications/msg_nope/retry')))[1]).toMatch(/^Refused: No notification with webhook-id msg_nope/);
    await get('/console/notifications?status=nope', 400);
  });

  it('runs the reconciliation now, lists its runs, and refuses a second run while one is under way', async () => {
    const [kind] = await outcome(await post('/console/reconciliation/run'));
    expect(kind).toBe('done');
    await waitFor('the run to finish', async () => !(await get('/console/reconciliation')).text.includes('badge-running'));
    const page = (await get('/console/reconciliation')).text;
    expect(page).toContain('<td data-label="By">ops@example.com</td>');
    expect(page).toMatch(/events seen, \d+ applied|provider/);
    const [audit] = await t.db.query(`SELECT actor FROM audit_log WHERE action = 'reconciliation.started'`);
    expect(audit.actor).toBe('operator:ops@example.com');
    // Another instance holds the lease: refused, nothing started.
    await t.db.query(`UPDATE job_leases SET holder = 'elsewhere', expires_at = now() + interval '1 hour' WHERE name = 'provider_sync'`);
    const [busy, why] = await outcome(await post('/console/reconciliation/run'));
    expect([busy, why]).toEqual(['refused', expect.stringMatching(/already under way/)]);
    await t.db.query(`UPDATE job_leases SET expires_at = now() WHERE name = 'provider_sync'`);
  });

  it('sets and removes an override from the organisation page, audited as the operator; a wrong value is refused', async () => {
    const org = await identity().createOrganisation('Override Ltd');
    const page = (await get(`/console/organisations/${org.id}`)).text;
    expect(page).toContain('No overrides.');
    expect(page).toContain('Why it has this license');
    const [done, text] = await outcome(await post(`/console/organisations/${org.id}/overrides`, { name: 'projects', value: '250', note: 'support grant' }));
    expect([done, text]).toEqual(['done', 'Override of projects set to 250.']);
    expect((await get(`/console/organisations/${org.id}`)).text).toContain('<dt>projects limit</dt><dd>250 <span class="badge badge-override">override</span>');
    const [audit] = await t.db.query(`SELECT actor, after FROM audit_log WHERE action = 'override.set' AND organisation_id = $1`, [org.id]);
    expect(audit).toMatchObject({ actor: 'operator:ops@example.com', after: { name: 'projects', value: 250 } });

    const [refused, why] = await outcome(await post(`/console/organisations/${org.id}/overrides`, { name: 'projects', value: 'lots' }));
    expect(refused).toBe('refused');
    expect(why).toMatch(/^Refused: /);
    const [unknown] = await outcome(await post(`/console/organisations/${org.id}/overrides`, { name: 'no_such_feature', value: 'true' }));
    expect(unknown).toBe('refused');

    const [removed, removedText] = await outcome(await post(`/console/organisations/${org.id}/overrides/projects/delete`));
    expect([removed, removedText]).toEqual(['done', 'Override of projects removed.']);
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM audit_log WHERE action = 'override.deleted' AND actor = 'operator:ops@example.com' AND organisation_id = $1`, [org.id]);
    expect(count).toBe(1);
    expect((await outcome(await post(`/console/organisations/${org.id}/overrides/projects/delete`)))[0]).toBe('refused');
  });

  it('refuses an override of an organisation id that is not a UUID as of one that does not exist, and writes nothing', async () => {
    const audited = async () => (await t.db.query(`SELECT count(*)::int AS n FROM audit_log`))[0].n;
    const before = await audited();
    for (const id of ['0'.repeat(36), '-'.repeat(36), 'zz', randomUUID()]) {
      for (const res of [
        await post(`/console/organisations/${id}/overrides`, { name: 'projects', value: '250' }),
        await post(`/console/organisations/${id}/overrides/projects/delete`),
      ]) {
        expect([id, res.status]).toEqual([id, 303]);
        const flash = JSON.parse(Buffer.from(/console_flash=([^;]+)/.exec(res.headers['set-cookie'][0])![1], 'base64url').toString('utf8'));
        expect(flash).toEqual({ kind: 'refused', text: `Refused: No organisation with id ${id}.` });
      }
      await get(`/console/organisations/${id}`, 404);
    }
    expect(await audited()).toBe(before);
  });

  it('shows the audit log newest first, a page at a time, and one entry with what it changed', async () => {
    const page = (await get('/console/audit')).text;
    expect(page).toContain('operator.signed_in');
    expect(page).toContain('<td data-label="Who"><span class="nowrap">ops@</span><wbr><span class="nowrap">example.com</span></td>');
    await get('/console/audit?after=x', 400);

    const [{ id }] = await t.db.query(`SELECT id::text AS id FROM audit_log WHERE action = 'operator.signed_in' ORDER BY id LIMIT 1`);
    const entry = (await get(`/console/audit/${id}`)).text;
    expect(entry).toContain(`<h1>Audit entry ${id}</h1>`);
    expect(entry).toContain('<dt>Action</dt><dd>operator.signed_in</dd>');
    expect(entry).toContain('<li><span class="field">via</span>: link</li>');
    // An id that is not one, or none: a clear refusal.
    expect((await get('/console/audit/12abc', 400)).text).toContain('An audit entry id is a whole number.');
    expect((await get('/console/audit/0', 400)).text).toContain('An audit entry id is a whole number.');
    expect((await get('/console/audit/999999999999', 404)).text).toContain('No audit entry with id 999999999999.');
  });
});
