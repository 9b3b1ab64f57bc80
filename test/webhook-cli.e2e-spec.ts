import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TIERS_FILE } from '../src/config/tiers';
import { cli } from './support/run-cli';
import { createOrganisation, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { invoiceObject, invoicePaidEvent, providerEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { deliver } from './support/webhook-signing';

/**
 * The CLI's command line in-process, on the test app's context; the replay with another tier table opens its
 * own from its environment, as the CLI does (cli.e2e-spec.ts spawns the real process).
 */
describe('operator CLI: events:list and events:replay', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let org: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp();
    env = { DATABASE_URL: t.databaseUrl, PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
    org = (await createOrganisation(t)).id;
    const send = (e: object) => deliver(t.app.getHttpServer(), e);
    const paid = invoicePaidEvent(invoiceObject({ organisationId: org }));
    const ignored = providerEvent('customer.created', { id: 'cus_x', object: 'customer' });
    const gold = subscriptionEvent('created', subscriptionObject({ organisationId: org, tier: 'gold' }));
    await send(paid).expect(200);
    await send(ignored).expect(200);
    await send(gold).expect(200);
    Object.assign(ids, { paid: paid.id, ignored: ignored.id, gold: gold.id });
  });
  afterAll(() => t.close());

  it('lists the ledger newest first, filtered by status and limited', async () => {
    const all = await cli(['events:list'], env, { app: t.app });
    expect(all.code).toBe(0);
    expect(all.stdout.trim().split('\n')).toHaveLength(1);
    expect(all.json.data.map((e: { id: string }) => e.id)).toEqual([ids.gold, ids.ignored, ids.paid]);
    expect(all.json.data[0]).toEqual({
      id: ids.gold,
      type: 'customer.subscription.created',
      created: expect.any(Number),
      livemode: false,
      status: 'failed',
      reason: expect.stringMatching(/"gold" is not a configured tier/),
      organisation_id: org,
      customer_id: expect.stringMatching(/^cus_/),
      subscription_id: expect.stringMatching(/^sub_/),
      source: 'webhook',
      attempts: 1,
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      processed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(JSON.stringify(all.json)).not.toMatch(/payload/);

    const failed = await cli(['events:list', '--status', 'failed'], env, { app: t.app });
    expect(failed.json.data.map((e: { id: string }) => e.id)).toEqual([ids.gold]);
    const limited = await cli(['events:list', '--limit', '1'], env, { app: t.app });
    expect(limited.json.data).toHaveLength(1);
  });

  it.each([
    [['events:list', '--status', 'weird'], /--status must be one of/],
    [['events:list', '--limit', '0'], /--limit must be/],
    // Whole numbers are plain digits, as in query parameters (src/common/query-int.decorator.ts).
    [['events:list', '--limit', '1e2'], /--limit must be/],
    [['events:list', '--limit', '0x10'], /--limit must be/],
    [['events:list', '--limit', ' 5'], /--limit must be/],
    [['events:replay'], /--id is required/],
  ])('%j → usage error, nothing on stdout', async (args, message) => {
    const res = await cli(args as string[], env, { app: t.app });
    expect(res.code).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message);
  });

  it('replays an unknown id → error', async () => {
    const res = await cli(['events:replay', '--id', 'evt_nope'], env, { app: t.app });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/No webhook event with id evt_nope/);
  });

  it('replay re-runs a failed event: still failed with the same tiers, processed once the tier exists', async () => {
    const again = await cli(['events:replay', '--id', ids.gold], env, { app: t.app });
    expect(again.json).toEqual({ id: ids.gold, status: 'failed', reason: expect.stringMatching(/gold/) });

    const dir = mkdtempSync(join(tmpdir(), 'tiers-'));
    const tiersFile = join(dir, 'tiers.json');
    writeFileSync(tiersFile, JSON.stringify({ ...DEFAULT_TIERS_FILE, gold: { projects: 500, ai_tokens: 5_000_000, users: 100 } }));
    const fixed = await cli(['events:replay', '--id', ids.gold], { ...env, TIERS_FILE: tiersFile });
    expect(fixed.code).toBe(0);
    expect(fixed.json).toEqual({ id: ids.gold, status: 'processed', reason: null });
    const [license] = await t.db.query(`SELECT tier FROM provider_subscriptions WHERE organisation_id = $1`, [org]);
    expect(license.tier).toBe('gold');
    const [row] = await t.db.query(`SELECT status, attempts FROM webhook_events WHERE id = $1`, [ids.gold]);
    expect(row).toEqual({ status: 'processed', attempts: 3 });
    // Each replay that ran is in the audit log, as the operator; the final one with its outcome.
    const audited = await t.db.query(`SELECT actor, organisation_id, after FROM audit_log WHERE action = 'event.replayed' AND after->>'id' = $1 ORDER BY id`, [ids.gold]);
    expect(audited).toHaveLength(2);
    expect(audited[1]).toEqual({ actor: expect.stringMatching(/^cli:.+/), organisation_id: org, after: fixed.json });
  });

  it('replaying a processed event changes nothing', async () => {
    const res = await cli(['events:replay', '--id', ids.paid], env, { app: t.app });
    expect(res.json).toEqual({ id: ids.paid, status: 'duplicate', reason: 'already received (processed)' });
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM billing_history WHERE organisation_id = $1`, [org]);
    expect(n).toBe(1);
    const [{ audited }] = await t.db.query(`SELECT count(*)::int AS audited FROM audit_log WHERE after->>'id' = $1`, [ids.paid]);
    expect(audited).toBe(0);
  });
});
