import { actorText, auditChanges, eventWords, explainTimeline, valueText } from '../src/console/console-text';
import type { ExplainResponse } from '../src/licensing/explain.dto';

describe('the console in words', () => {
  it('names the actor of an audited change, keeping a user id beside its email', () => {
    const emails = new Map([['7f3c0f0e-0000-4000-8000-000000000001', 'ada@example.com']]);
    expect(actorText('operator:ops@example.com', emails)).toEqual({ text: 'ops@example.com', id: null });
    expect(actorText('user:7f3c0f0e-0000-4000-8000-000000000001', emails)).toEqual({ text: 'ada@example.com', id: '7f3c0f0e-0000-4000-8000-000000000001' });
    expect(actorText('user:7f3c0f0e-0000-4000-8000-000000000002', emails)).toEqual({ text: 'a deleted user', id: '7f3c0f0e-0000-4000-8000-000000000002' });
    expect(actorText('service_key:webapp', emails).text).toBe('service key “webapp”');
    expect(actorText('cli:root', emails).text).toBe('the CLI (root)');
    expect(actorText('schedule', emails).text).toBe('schedule');
  });

  it('lists only the fields a change changed, before → after, in words', () => {
    expect(auditChanges({ name: 'projects', value: 10_000_000, note: null }, { name: 'projects', value: 20_000_000, note: null })).toEqual([
      { field: 'value', before: '10,000,000', after: '20,000,000' },
    ]);
    // Created: what it was created with; removed: what it had.
    expect(auditChanges(null, { role: 'owner', active: true })).toEqual([
      { field: 'role', before: null, after: 'owner' },
      { field: 'active', before: null, after: 'yes' },
    ]);
    expect(auditChanges({ expires_at: '2030-01-01T00:00:00.000Z' }, null)).toEqual([{ field: 'expires_at', before: '1 Jan 2030, 00:00 UTC', after: null }]);
    // A field that appears or goes away is a change; an equal nested value is not.
    expect(auditChanges({ a: { x: 1 } }, { a: { x: 1 }, b: 2 })).toEqual([{ field: 'b', before: null, after: '2' }]);
    expect(auditChanges(null, null)).toEqual([]);
  });

  it('shows Unix seconds of a time field as a time, other numbers with separators', () => {
    expect(valueText('current_period_end', 1_767_225_600)).toBe('1 Jan 2026, 00:00 UTC');
    expect(valueText('clock', 1_767_225_600)).toBe('1 Jan 2026, 00:00 UTC');
    expect(valueText('revoked', 1_767_225_600)).toBe('1,767,225,600');
    expect(valueText('seats', 12)).toBe('12');
    expect(valueText('plan', { tier: 'pro' })).toBe('{"tier":"pro"}');
  });

  it('says why an organisation has its license, one sentence per step, each linking to its record', () => {
    const explain: ExplainResponse = {
      tier: 'pro',
      is_active: true,
      is_expired: false,
      plan_version: { version: 2, recorded_at: '2025-11-01T09:00:00.000Z' },
      grants: [],
      because: [
        { kind: 'override', name: 'sso', value: true, expires_at: '2030-01-01T00:00:00.000Z', note: 'pilot', created_at: '2025-11-14T10:00:00.000Z' },
        { kind: 'override', name: 'projects', value: 250, expires_at: null, note: null, created_at: '2025-11-13T10:00:00.000Z' },
        { kind: 'grace', subscription_id: 'sub_1', past_due_since: 1_763_078_400, ends_at: 1_763_683_200, in_grace: true },
        { kind: 'subscription', id: 'sub_1', status: 'past_due', tier: 'pro', tier_source: 'configured_price' },
        { kind: 'event', id: 'evt_1', type: 'invoice.payment_failed', created: 1_763_078_400, outcome: 'processed', reason: null },
        { kind: 'event', id: 'evt_0', type: 'vendor.custom', created: 1_763_000_000, outcome: 'stale', reason: 'older' },
        { kind: 'not_chosen', id: 'sub_0', status: 'canceled', tier: 'team', reason: 'deleted' },
      ],
    };
    const steps = explainTimeline(explain, {
      periods: new Map([['sub_1', { currentPeriodEnd: 1_765_670_400, cancelAtPeriodEnd: false }]]),
      overrideEntries: new Map([['sso', { id: '42', by: 'ada@example.com' }]]),
    });
    expect(steps).toEqual([
      { when: '14 Nov 2025', text: 'Override: sso on, by ada@example.com, until 1 Jan 2030 (“pilot”).', link: { href: '/console/audit/42', label: 'audit entry 42' } },
      { when: '13 Nov 2025', text: 'Override: projects limit 250, with no end.', link: null },
      {
        when: '14 Nov 2025',
        text: 'Payment overdue: past due since 14 Nov 2025; grace lasts until 21 Nov 2025, so the paid tier still applies.',
        link: { href: '#sub-sub_1', label: 'subscription sub_1' },
      },
      {
        when: null,
        text: 'The license follows this subscription: pro past due renewing 14 Dec 2025 (tier from a configured price).',
        link: { href: '#sub-sub_1', label: 'subscription sub_1' },
      },
      { when: '14 Nov 2025, 00:00 UTC', text: 'Payment failed → applied.', link: { href: '/console/events/evt_1', label: 'event evt_1' } },
      { when: '13 Nov 2025, 02:13 UTC', text: 'Vendor.custom → older than one already applied, not applied: older.', link: { href: '/console/events/evt_0', label: 'event evt_0' } },
      { when: null, text: 'Not followed: team canceled, because it was deleted.', link: { href: '#sub-sub_0', label: 'subscription sub_0' } },
    ]);
    expect(explainTimeline({ ...explain, because: [{ kind: 'no_subscription', reason: 'the organisation has no subscription: the free tier applies' }] }, { periods: new Map(), overrideEntries: new Map() })).toEqual([
      { when: null, text: 'The organisation has no subscription: the free tier applies.', link: null },
    ]);
  });

  it('names event types in words, an unknown one as it is', () => {
    expect(eventWords('invoice.payment_succeeded')).toBe('invoice paid');
    expect(eventWords('vendor.custom')).toBe('vendor.custom');
  });
});
