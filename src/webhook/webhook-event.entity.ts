import { Column, Entity, PrimaryColumn } from 'typeorm';

export const LEDGER_STATUSES = ['processed', 'duplicate', 'stale', 'unmatched', 'ignored', 'failed'] as const;
export type LedgerStatus = (typeof LEDGER_STATUSES)[number];

/**
 * One provider event as received (the ledger). Written in the same transaction as the event's effects,
 * so a row exists exactly when the event was acknowledged. The webhook code writes it with plain SQL;
 * this entity documents the table.
 */
@Entity('webhook_events')
export class WebhookEvent {
  /** The provider's event id (`evt_…`): unique, so a redelivery is recognised. */
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  type: string;

  /** The event's `created` (Unix seconds). */
  @Column('bigint')
  created: number;

  @Column('boolean', { default: false })
  livemode: boolean;

  /** The verified event, so `events:replay` can run it again. */
  @Column('jsonb')
  payload: object;

  @Column('text')
  status: LedgerStatus;

  @Column('text', { nullable: true })
  reason: string | null;

  @Column('uuid', { name: 'organisation_id', nullable: true })
  organisationId: string | null;

  /** Kept so an unmatched event can be applied when a later event links its customer or subscription. */
  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  @Column('text', { name: 'subscription_id', nullable: true })
  subscriptionId: string | null;

  /** Deliveries and replays of this event id. */
  @Column('integer', { default: 1 })
  attempts: number;

  @Column('timestamptz', { name: 'received_at' })
  receivedAt: Date;

  @Column('timestamptz', { name: 'last_received_at' })
  lastReceivedAt: Date;

  @Column('timestamptz', { name: 'processed_at', nullable: true })
  processedAt: Date | null;
}
