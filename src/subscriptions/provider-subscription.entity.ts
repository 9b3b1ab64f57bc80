import { Check, Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';

/** A change a subscription schedule makes at the end of the current period (spec §11.4). */
export interface PendingChange {
  tier: string | null;
  interval: string | null;
  seats: number | null;
  /** Unix seconds. */
  effective_at: number;
}

/**
 * A provider subscription tied to an organisation, with its state as the provider last told it (in event
 * order). An organisation's license follows its best live subscription (licensing/licensing.repository.ts).
 * Lets events without metadata find their organisation, and remembers deletions: a deleted subscription
 * id never comes back to life. Provider timestamps are Unix seconds.
 */
@Entity('provider_subscriptions')
@Index('provider_subscriptions_org_idx', ['organisationId'])
@Check('provider_subscriptions_tier_source_check', `tier_source IN ('configured_price', 'price_metadata', 'lookup_key', 'subscription_metadata')`)
export class ProviderSubscription {
  @PrimaryColumn('text', { name: 'subscription_id', primaryKeyConstraintName: 'provider_subscriptions_pkey' })
  subscriptionId: string;

  @Column('uuid', { name: 'organisation_id' })
  @ForeignKey(() => Organisation, { name: 'provider_subscriptions_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  /** The paid tier its price grants (null until an event with a resolvable tier was applied). */
  @Column('text', { nullable: true })
  tier: string | null;

  /**
   * The plan version of its tier it is on (spec §17): its tier's newest when it was stored first or its tier last
   * changed, set by a trigger (migration 1764002410000-Grandfathering); its license comes from it.
   */
  @Column('integer', { name: 'plan_version', nullable: true })
  planVersion: number | null;

  /**
   * A plan migration at the period's end (spec §17): the version it moves to when its current period ends. The
   * same trigger puts it in force on the first write that shows a period starting at or after
   * `next_plan_version_at` (the renewal's event, or the reconciliation), and drops it when the tier changes.
   */
  @Column('integer', { name: 'next_plan_version', nullable: true })
  nextPlanVersion: number | null;

  /** Unix seconds: the end of the period the migration was made in, when `next_plan_version` takes over. */
  @Column('bigint', { name: 'next_plan_version_at', nullable: true })
  nextPlanVersionAt: number | null;

  /**
   * How that tier was resolved (tier-resolution.ts): configured_price, price_metadata, lookup_key or
   * subscription_metadata. Null for a tier applied before this was recorded (migration 1764000500000).
   */
  @Column('text', { name: 'tier_source', nullable: true })
  tierSource: string | null;

  /** The provider's status: active, trialing, past_due, unpaid, incomplete, incomplete_expired, paused, canceled. */
  @Column('text', { nullable: true })
  status: string | null;

  @Column('bigint', { name: 'current_period_start', nullable: true })
  currentPeriodStart: number | null;

  @Column('bigint', { name: 'current_period_end', nullable: true })
  currentPeriodEnd: number | null;

  /** `created` of the first event that showed it past_due after another status: grace counts from here. */
  @Column('bigint', { name: 'past_due_since', nullable: true })
  pastDueSince: number | null;

  /** `created` of the last subscription event applied to it: older events are stale. */
  @Column('bigint', { name: 'last_event_created', nullable: true })
  lastEventCreated: number | null;

  /** Precedence of that event's kind (created 1 < updated 2 < deleted 3), for events with equal `created`. */
  @Column('smallint', { name: 'last_event_rank', nullable: true })
  lastEventRank: number | null;

  /** Its item's `quantity`: the seats bought (the `users` limit in force of a per-seat tier, spec §11.5). */
  @Column('integer', { nullable: true })
  seats: number | null;

  /** Its price's recurring interval (`month`, `year`, …). */
  @Column('text', { nullable: true })
  interval: string | null;

  /** Set to end at the current period's end (the paid tier stays until then). */
  @Column('boolean', { name: 'cancel_at_period_end', default: false })
  cancelAtPeriodEnd: boolean;

  /** The end of its trial (Unix seconds), as the provider says; null when it has none. */
  @Column('bigint', { name: 'trial_end', nullable: true })
  trialEnd: number | null;

  /** The provider subscription schedule attached to it, when one holds a pending change. */
  @Column('text', { name: 'schedule_id', nullable: true })
  scheduleId: string | null;

  /** What the schedule changes at the period's end: `{tier, interval, seats, effective_at}`; null when nothing. */
  @Column('jsonb', { name: 'pending_change', nullable: true })
  pendingChange: PendingChange | null;

  /**
   * `created` and rank (updated 1 < released, canceled, completed 2) of the last subscription schedule event
   * applied to it: schedule events are ordered among themselves, as subscription events are.
   */
  @Column('bigint', { name: 'schedule_event_created', nullable: true })
  scheduleEventCreated: number | null;

  @Column('smallint', { name: 'schedule_event_rank', nullable: true })
  scheduleEventRank: number | null;

  /** `created` of its `customer.subscription.deleted` event; set means deleted for good. */
  @Column('bigint', { name: 'deleted_event_created', nullable: true })
  deletedEventCreated: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
