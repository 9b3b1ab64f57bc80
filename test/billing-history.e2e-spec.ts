import { randomUUID } from 'node:crypto';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

describe('GET /api/billing/history', () => {
  let t: TestApp;
  let orgA: string;
  let orgB: string;
  let memberA: Awaited<ReturnType<typeof createUserWithSession>>;
  let ownerB: Awaited<ReturnType<typeof createUserWithSession>>;

  const insert = (orgId: string, invoiceId: string, paidAt: number) =>
    t.db.query(
      `INSERT INTO billing_history (organisation_id, invoice_id, subscription_id, amount_paid, currency,
                                    period_start, period_end, paid_at, hosted_invoice_url)
       VALUES ($1, $2, 'sub_1', 2900, 'EUR', $3::bigint, $3::bigint + 2592000, $3::bigint, $4)`,
      [orgId, invoiceId, paidAt, `https://invoice.example/${invoiceId}`],
    );

  beforeAll(async () => {
    t = await startTestApp();
    orgA = (await createOrganisation(t, 'A')).id;
    orgB = (await createOrganisation(t, 'B')).id;
    memberA = await createUserWithSession(t, { org: orgA, role: 'member' });
    ownerB = await createUserWithSession(t, { org: orgB, role: 'owner' });
    // 25 invoices for A, several paid in the same second (ties are broken by row id).
    for (let i = 0; i < 25; i++) await insert(orgA, `in_a_${String(i).padStart(2, '0')}`, 1_700_000_000 + Math.floor(i / 3) * 60);
    for (let i = 0; i < 3; i++) await insert(orgB, `in_b_${i}`, 1_800_000_000 + i);
  });
  afterAll(() => t.close());

  const get = (user: { auth: Record<string, string> }, query: Record<string, unknown>) =>
    t.http().get('/api/billing/history').query(query).set(user.auth);

  it('lists newest first, 10 by default, in the documented entry shape', async () => {
    const res = await get(memberA, { organisation_id: orgA }).expect(200);
    expect(res.body.has_more).toBe(true);
    expect(res.body.data).toHaveLength(10);
    expect(res.body.data[0]).toEqual({
      invoice_id: 'in_a_24',
      subscription_id: 'sub_1',
      amount_paid: 2900,
      currency: 'EUR',
      period_start: 1_700_000_000 + 8 * 60,
      period_end: 1_700_000_000 + 8 * 60 + 2592000,
      paid_at: 1_700_000_000 + 8 * 60,
      hosted_invoice_url: 'https://invoice.example/in_a_24',
    });
    const paidAt = res.body.data.map((e: { paid_at: number }) => e.paid_at);
    expect(paidAt).toEqual([...paidAt].sort((a, b) => b - a));
  });

  it('pages with starting_after through every entry exactly once, ties included', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await get(memberA, { organisation_id: orgA, limit: 7, ...(cursor ? { starting_after: cursor } : {}) }).expect(200);
      seen.push(...res.body.data.map((e: { invoice_id: string }) => e.invoice_id));
      if (!res.body.has_more) break;
      cursor = seen[seen.length - 1];
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    // Pages are consistent with one full listing.
    const all = await get(memberA, { organisation_id: orgA, limit: 100 }).expect(200);
    expect(all.body).toEqual({ data: expect.any(Array), has_more: false });
    expect(all.body.data.map((e: { invoice_id: string }) => e.invoice_id)).toEqual(seen);
  });

  it('has_more is false when the page ends exactly at the last entry', async () => {
    const res = await get(ownerB, { organisation_id: orgB, limit: 3 }).expect(200);
    expect(res.body.data.map((e: { invoice_id: string }) => e.invoice_id)).toEqual(['in_b_2', 'in_b_1', 'in_b_0']);
    expect(res.body.has_more).toBe(false);
    const last = await get(ownerB, { organisation_id: orgB, starting_after: 'in_b_0' }).expect(200);
    expect(last.body).toEqual({ data: [], has_more: false });
  });

  it('is empty for an organisation without invoices', async () => {
    const org = await createOrganisation(t, 'Empty');
    const admin = await createUserWithSession(t, { org: org.id, role: 'admin' });
    expect((await get(admin, { organisation_id: org.id }).expect(200)).body).toEqual({ data: [], has_more: false });
  });

  it("never shows another organisation's history: 403 with one body, and its invoice ids are no cursor", async () => {
    const a = await get(ownerB, { organisation_id: orgA }).expect(403);
    const b = await get(ownerB, { organisation_id: randomUUID() }).expect(403);
    expect(a.body).toEqual(b.body);
    expect(a.body.code).toBe('organisation_forbidden');
    const probe = await get(ownerB, { organisation_id: orgB, starting_after: 'in_a_05' }).expect(400);
    expect(probe.body.code).toBe('invalid_cursor');
  });

  it('400 for a bad limit, an unknown cursor, a missing or malformed organisation_id, an unknown parameter', async () => {
    for (const limit of ['0', '101', 'abc', '1.5', '-1']) {
      expect((await get(memberA, { organisation_id: orgA, limit }).expect(400)).body.code).toBe('validation_failed');
    }
    expect((await get(memberA, { organisation_id: orgA, starting_after: 'in_nope' }).expect(400)).body.code).toBe('invalid_cursor');
    expect((await get(memberA, {}).expect(400)).body.code).toBe('validation_failed');
    expect((await get(memberA, { organisation_id: 'x' }).expect(400)).body.code).toBe('validation_failed');
    expect((await get(memberA, { organisation_id: orgA, offset: 5 }).expect(400)).body.code).toBe('validation_failed');
  });

  it('accepts the limit bounds 1 and 100', async () => {
    expect((await get(memberA, { organisation_id: orgA, limit: 1 }).expect(200)).body.data).toHaveLength(1);
    expect((await get(memberA, { organisation_id: orgA, limit: 100 }).expect(200)).body.data).toHaveLength(25);
  });

  it('401 without a session', async () => {
    await t.http().get('/api/billing/history').query({ organisation_id: orgA }).expect(401);
  });
});
