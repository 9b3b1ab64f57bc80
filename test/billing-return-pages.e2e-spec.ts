import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

/**
 * The pages a buyer lands on with the default APP_URL (the service's own origin): after paying, after
 * cancelling a checkout and after leaving the portal. Public, static, no script, and nothing read from the
 * query but an escaped echo of a well-formed session id.
 */
describe('billing return pages', () => {
  let t: TestApp;
  const APP = 'http://localhost:3000'; // the default APP_URL
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const PAGES = [
    { path: '/billing/success?session_id=cs_test_a1YS1URl', title: 'Payment received', says: 'Your plan is being activated; it can take a few seconds' },
    { path: '/billing/cancel', title: 'Checkout cancelled', says: 'Nothing was charged.' },
    { path: '/billing', title: 'Back from the billing portal', says: 'Any change you made there is being applied' },
  ];

  it.each(PAGES)('GET $path is a small phone-readable page saying what happened, with the HTML pages\' headers', async ({ path, title, says }) => {
    const res = await t.http().get(path).expect(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toMatch(/^<!doctype html>\n<html lang="en">/);
    expect(res.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(res.text).toContain(`<title>${title} · Billing</title>`);
    expect(res.text).toContain(`<h1>${title}</h1>`);
    expect(res.text).toContain(says);
    expect(res.text).not.toMatch(/<script|<link|https?:\/\//i); // no script, no external asset, no link out
    expect(res.text).not.toContain('Sandbox'); // they follow a real provider's checkout too
    // As the sandbox's pages: not cached, no Referer (the URL carries the session id), a CSP with no script.
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).not.toContain('script-src');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
    // HEAD answers too (a link checker, a browser's prefetch).
    await t.http().head(path).expect(200);
  });

  it('shows a well-formed session id as the reference, escaped, and never a hostile one', async () => {
    const ok = await t.http().get('/billing/success').query({ session_id: 'cs_test_a1YS1URl' }).expect(200);
    expect(ok.text).toContain('<p>Reference: <code>cs_test_a1YS1URl</code></p>');

    const hostile = [
      '"><script>alert(1)</script>',
      'cs_x"><img src=x onerror=alert(1)>',
      "cs_test_1'><svg onload=alert(1)>",
      `cs_${'a'.repeat(251)}`,
    ];
    for (const sessionId of hostile) {
      const res = await t.http().get('/billing/success').query({ session_id: sessionId }).expect(200);
      expect(res.text).toContain('<h1>Payment received</h1>');
      expect(res.text).not.toContain('Reference:');
      expect(res.text).not.toMatch(/<script|<img|<svg|onerror|onload/i);
    }
    // Repeated, or missing: the page without a reference.
    const repeated = await t.http().get('/billing/success?session_id=cs_test_a&session_id=cs_test_b').expect(200);
    expect(repeated.text).not.toContain('Reference:');
    const none = await t.http().get('/billing/success').expect(200);
    expect(none.text).not.toContain('Reference:');
  });

  it('reads nothing about the session: a paid checkout of ours looks like a made-up id', async () => {
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);
    const id: string = checkout.body.session_id;
    const pay = await t.http().post(`/sandbox/checkout/${id}/pay`).type('form').send('').expect(303);
    expect(pay.headers.location).toBe(`${APP}/billing/success?session_id=${id}`);

    const landed = await t.http().get(new URL(pay.headers.location).pathname + new URL(pay.headers.location).search).expect(200);
    const madeUp = await t.http().get('/billing/success').query({ session_id: 'cs_test_madeup' }).expect(200);
    expect(landed.text.replace(id, 'ID')).toBe(madeUp.text.replace('cs_test_madeup', 'ID'));
    expect(landed.text).not.toContain('€29.00');
    expect(landed.text).not.toMatch(/\bpro\b/);
  });

  it('are the default return URLs of checkout and portal', async () => {
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'team' }).expect(201);
    const checkoutPage = await t.http().get(new URL(checkout.body.url).pathname).expect(200);
    expect(checkoutPage.text).toContain(`<a href="${APP}/billing/cancel">Cancel and return</a>`);
    await t.http().post(`/sandbox/checkout/${checkout.body.session_id}/pay`).type('form').send('').expect(303);

    const portal = await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    const portalPage = await t.http().get(new URL(portal.body.url).pathname).expect(200);
    expect(portalPage.text).toContain(`<a href="${APP}/billing">Return to the application</a>`);
  });

  it('are public, and left out of the OpenAPI document like the sandbox pages', async () => {
    const doc = (await t.http().get('/api/docs-json').expect(200)).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/billing'))).toEqual([]);
    expect(Object.keys(doc.paths)).toContain('/api/billing/checkout'); // the walk saw the document
    // A session or a cookie changes nothing (they are not even read).
    const res = await t.http().get('/billing/cancel').set('Authorization', 'Bearer nonsense').expect(200);
    expect(res.text).toContain('<h1>Checkout cancelled</h1>');
  });
});
