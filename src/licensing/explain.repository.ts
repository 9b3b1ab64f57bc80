import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { NotCandidate, subscriptionSql } from '../subscriptions/subscriptions.repository';
import { AppConfig } from '../config/app-config';
import { namedParams, preparedQuery } from '../database/prepared';
import { accessSql } from '../identity/access.sql';
import { ledgerSql } from '../webhook/webhook-ledger.repository';
import { ChoiceLoss, licenseChoiceSql } from './license-choice.sql';
import { licenseStateSql, licenseStateValues } from './licensing.repository';

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
  tier: string;
  isActive: boolean;
  isExpired: boolean;
  /** The license's tier is still in the tier table (else free limits apply). */
  tierKnown: boolean;
  /** The subscription the license state chose; null when none is a candidate (free). */
  chosen: ExplainedSubscription | null;
  /** Set when the chosen one is past_due: when it became so, when grace ends, and whether now is within it. */
  grace: { pastDueSince: number | null; endsAt: number | null; inGrace: boolean } | null;
  /** The live overrides (the license state's own `overrides`), newest first. */
  overrides: { name: string; value: boolean | number; expires_at: string | null; note: string | null; created_at: string }[];
  /** The chosen one's newest events in the ledger, newest first. */
  events: { id: string; type: string; created: number; status: string; reason: string | null }[];
  /** Every other subscription, newest last event first, with why it was not chosen. */
  others: (ExplainedSubscription & { reason: NotCandidate | ChoiceLoss })[];
}

const EXPLAIN = namedParams('organisation', 'tiers', 'graceS', 'user');

// The chosen subscription is the license state's own (`flags.subscription_id`); the others are compared with
// it on the rule's keys (licenseChoiceSql.lostOn), or carry billing's reason for not being a candidate.
const EXPLAIN_SQL = `
  WITH ${licenseStateSql(EXPLAIN.ref)},
  ranked AS (${licenseChoiceSql.ranked({ ...EXPLAIN.ref, nowS: 'extract(epoch FROM now())::bigint' })}),
  subs AS (${subscriptionSql.ofOrganisation(`${EXPLAIN.ref.organisation}::uuid`)}),
  chosen AS (SELECT r.* FROM ranked r JOIN flags f ON r.subscription_id = f.subscription_id)
  SELECT json_build_object(
    'allowed', CASE WHEN ${EXPLAIN.ref.user}::uuid IS NULL THEN ${accessSql.organisationExists(`${EXPLAIN.ref.organisation}::uuid`)}
                    ELSE ${accessSql.isMember(`${EXPLAIN.ref.organisation}::uuid`, `${EXPLAIN.ref.user}::uuid`)} END,
    'tier', f.tier, 'isActive', f.is_active, 'isExpired', f.is_expired, 'tierKnown', f.tier_known,
    'chosen', (SELECT json_build_object('id', s.subscription_id, 'tier', s.tier, 'tierSource', s.tier_source, 'status', s.status,
                                        'lastEventCreated', s.last_event_created)
               FROM subs s WHERE s.subscription_id = f.subscription_id),
    'grace', CASE WHEN f.status = 'past_due' THEN json_build_object(
               'pastDueSince', f.past_due_since, 'endsAt', COALESCE(f.past_due_since, f.period_end) + ${EXPLAIN.ref.graceS}::bigint,
               'inGrace', f.in_grace) END,
    'overrides', COALESCE((SELECT json_agg(json_build_object('name', o.name, 'value', o.value, 'expires_at', o.expires_at, 'note', o.note,
                                                             'created_at', o.created_at) ORDER BY o.created_at DESC, o.name)
                           FROM overrides o), '[]'),
    'events', COALESCE((SELECT json_agg(json_build_object('id', e.id, 'type', e.type, 'created', e.created, 'status', e.status,
                                                          'reason', e.reason))
                        FROM (${ledgerSql.eventsOfSubscription('f.subscription_id', EXPLAIN_EVENTS)}) e), '[]'),
    'others', COALESCE((SELECT json_agg(json_build_object('id', s.subscription_id, 'tier', s.tier, 'tierSource', s.tier_source,
                                                          'status', s.status, 'lastEventCreated', s.last_event_created,
                                                          'reason', COALESCE(s.not_candidate, ${licenseChoiceSql.lostOn('r', 'c')}))
                                 ORDER BY s.last_event_created DESC NULLS LAST, s.subscription_id)
                        FROM subs s LEFT JOIN ranked r ON r.subscription_id = s.subscription_id LEFT JOIN chosen c ON true
                        WHERE s.subscription_id IS DISTINCT FROM f.subscription_id), '[]')
  ) AS explain
  FROM flags f`;

/** The explain read: licensing's license state with billing's subscriptions and the webhook's ledger, one statement. */
@Injectable()
export class ExplainRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  /** `userId` null: a service-key caller. */
  async explain(organisationId: string, userId: string | null): Promise<ExplainRow> {
    const values = EXPLAIN.values({ ...licenseStateValues(this.config, organisationId), user: userId });
    const [row] = await preparedQuery<{ explain: ExplainRow }>(this.db, EXPLAIN_SQL, values);
    return row.explain;
  }
}
