import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from '../identity/organisation.entity';
import type { LedgerStatus } from '../provider/provider-event';

/** How an event first reached the ledger: delivered, or found by the reconciliation (spec §9). */
export const EVENT_SOURCES = ['webhook', 'sync', 'replay'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/**
 * One provider event as received (the ledger). Written in the same transaction as the event's effects,
 * so a row exists exactly when the event was acknowledged. The webhook code writes it with plain SQL;
 * this entity documents the table.
 */
@Entity('webhook_events')
@Check('webhook_events_source_check', `source IN ('webhook', 'sync', 'replay')`)
// The database's index keys are `received_at DESC`; TypeORM cannot declare a key's order and compares
// indices by name and columns only, so these two document the columns.
@Index('webhook_events_status_idx', ['status', 'receivedAt'])
@Index('webhook_events_received_idx', ['receivedAt'])
// The operator console: an organisation's events, and the events of one type, newest first.
@Index('webhook_events_organisation_idx', ['organisationId', 'receivedAt'])
@Index('webhook_events_type_idx', ['type', 'receivedAt'])
// Unmatched events are looked up again when a later event links their customer or subscription.
@Index('webhook_events_unmatched_customer_idx', ['customerId'], { where: `status = 'unmatched'` })
@Index('webhook_events_unmatched_subscription_idx', ['subscriptionId'], { where: `status = 'unmatched'` })
// A subscription's events, newest first, for GET /api/licensing/explain.
@Index('webhook_events_subscription_idx', ['subscriptionId', 'created'])
@Check('webhook_events_status_check', `status IN ('processed', 'duplicate', 'stale', 'unmatched', 'ignored', 'failed')`)
export class WebhookEvent {
  /** The provider's event id (`evt_…`): unique, so a redelivery is recognised. */
  @PrimaryColumn('text', { primaryKeyConstraintName: 'webhook_events_pkey' })
  id: string;

  @Column('text')
  type: string;

  /** The event's `created` (Unix seconds). */
  @Column('bigint')
  created: number;

  @Column('boolean', { default: false })
  livemode: boolean;

  /**
   * The verified event as received (JSON text, not jsonb: jsonb refuses `\u0000` and lone surrogates, which
   * a signed event may carry). A redelivery or `events:replay` applies this, whatever body came later.
   */
  @Column('text')
  payload: string;

  @Column('text')
  status: LedgerStatus;

  @Column('text', { nullable: true })
  reason: string | null;

  @Column('uuid', { name: 'organisation_id', nullable: true })
  @ForeignKey(() => Organisation, { name: 'webhook_events_organisation_id_fkey', onDelete: 'SET NULL' })
  organisationId: string | null;

  /** Kept so an unmatched event can be applied when a later event links its customer or subscription. */
  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  @Column('text', { default: 'webhook' })
  source: EventSource;

  /** Deliveries and replays of this event id. */
  @Column('integer', { default: 1 })
  attempts: number;

  @Column('timestamptz', { name: 'received_at', default: () => 'now()' })
  receivedAt: Date;

  @Column('timestamptz', { name: 'last_received_at', default: () => 'now()' })
  lastReceivedAt: Date;

  @Column('timestamptz', { name: 'processed_at', nullable: true })
  processedAt: Date | null;
}
