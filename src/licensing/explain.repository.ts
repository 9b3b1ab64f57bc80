import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { licenseArguments } from '../config/tiers';
import { namedParams, preparedQuery } from '../database/prepared';
import { NotChosen } from './license-state';

/** The newest events of the chosen subscription an explanation lists. */
export const EXPLAIN_EVENTS = 20;

export interface ExplainedSubscription {
  id: string;
  tier: string | null;
  tierSource: string | null;
  status: string | null;
  lastEventCreated: number | null;
}

/** Everything GET /api/licensing/explain says, read in one statement (so all of it is one moment's truth). */
export interface ExplainRow {
  /** The caller may read it: a member, or (service key) the organisation exists. */
  allowed: boolean;
  /** The caller's role there; null for a service key. */
  role: string | null;
  tier: string;
  isActive: boolean;
  isExpired: boolean;
  /** The license's tier is still in the tier table (else free limits apply). */
  tierKnown: boolean;
  /** The plan version the license comes from (spec §17) and when it was recorded; null when the tier has none. */
  planVersion: { version: number; recordedAt: string } | null;
  /** The subscription the license state chose; null when none is a candidate (free). */
  chosen: ExplainedSubscription | null;
  /** Set when the chosen one is past_due: its grace (subscriptions.of_organisation's): since when, until when, and whether now is within it. */
  grace: { since: number | null; endsAt: number | null; inGrace: boolean } | null;
  /** The live overrides (the license state's own `overrides`), newest first. */
  overrides: { name: string; value: boolean | number; expires_at: string | null; note: string | null; created_at: string }[];
  /** The credit grants that count, of the metrics whose policy in force is credits, by metric in their draw order. */
  grants: { id: string; metric: string; amount: number; remaining: number; category: string; priority: number; source: string; effective_at: string; expires_at: string | null; note: string | null }[];
  /** The chosen one's newest events in the ledger, newest first. */
  events: { id: string; type: string; created: number; status: string; reason: string | null }[];
  /** Every other subscription, newest last event first, with why it was not chosen. */
  others: (ExplainedSubscription & { reason: NotChosen })[];
}

const EXPLAIN = namedParams('organisation', 'tiers', 'graceS', 'user');
const { organisation: $org, tiers: $tiers, graceS: $grace, user: $user } = EXPLAIN.ref;

// The license and its choice of subscription (licensing.subscription_choice, the same rule license_state follows),
// with the ledger's events of the chosen one (webhook.subscription_events) and the credit grants that count
// (credits.counting_grants).
const EXPLAIN_SQL = `
  WITH choice AS (SELECT * FROM licensing.subscription_choice(${$org}::uuid, ${$tiers}::jsonb, ${$grace}::bigint))
  SELECT json_build_object(
    'allowed', a.allowed, 'role', a.role,
    'tier', l.tier, 'isActive', l.is_active, 'isExpired', l.is_expired, 'tierKnown', l.tier_known,
    'planVersion', CASE WHEN l.plan_version IS NOT NULL THEN json_build_object('version', l.plan_version, 'recordedAt', l.plan_version_at) END,
    'chosen', (SELECT json_build_object('id', c.subscription_id, 'tier', c.tier, 'tierSource', c.tier_source, 'status', c.status,
                                        'lastEventCreated', c.last_event_created)
               FROM choice c WHERE c.chosen),
    'grace', (SELECT json_build_object('since', c.grace_since, 'endsAt', c.grace_ends_at, 'inGrace', c.in_grace)
              FROM choice c WHERE c.chosen AND c.status = 'past_due'),
    'overrides', COALESCE((SELECT json_agg(json_build_object('name', o.name, 'value', o.value, 'expires_at', o.expires_at, 'note', o.note,
                                                             'created_at', o.created_at) ORDER BY o.created_at DESC, o.name)
                           FROM licensing.live_overrides(${$org}::uuid) o), '[]'),
    'events', COALESCE((SELECT json_agg(json_build_object('id', e.id, 'type', e.type, 'created', e.created, 'status', e.status,
                                                          'reason', e.reason))
                        FROM webhook.subscription_events(l.subscription_id, ${EXPLAIN_EVENTS}) e), '[]'),
    'others', COALESCE((SELECT json_agg(json_build_object('id', c.subscription_id, 'tier', c.tier, 'tierSource', c.tier_source,
                                                          'status', c.status, 'lastEventCreated', c.last_event_created,
                                                          'reason', c.not_chosen)
                                 ORDER BY c.last_event_created DESC NULLS LAST, c.subscription_id)
                        FROM choice c WHERE NOT c.chosen), '[]'),
    'grants', COALESCE((SELECT json_agg(json_build_object('id', g.id, 'metric', g.metric, 'amount', g.amount, 'remaining', g.remaining,
                                                          'category', g.category, 'priority', g.priority, 'source', g.source,
                                                          'effective_at', g.effective_at, 'expires_at', g.expires_at, 'note', g.note)
                                 ORDER BY g.metric, g.draw_order)
                        FROM credits.counting_grants(${$org}::uuid) g WHERE l.overage ->> g.metric = 'credits'), '[]')
  ) AS explain
  FROM licensing.license_state(${$org}::uuid, ${$tiers}::jsonb, ${$grace}::bigint) l
  CROSS JOIN identity.access(${$org}::uuid, ${$user}::uuid, NULL) a`;

/** The explain read: the license with its choice of subscription and the ledger's events, one statement. */
@Injectable()
export class ExplainRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** `userId` null: a service-key caller. */
  async explain(organisationId: string, userId: string | null): Promise<ExplainRow> {
    const values = EXPLAIN.values({ organisation: organisationId, ...licenseArguments(this.config), user: userId });
    const [row] = await preparedQuery<{ explain: ExplainRow }>(this.db, EXPLAIN_SQL, values);
    return row.explain;
  }
}
