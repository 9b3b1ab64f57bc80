import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { SandboxCustomer } from './sandbox-customer.entity';

/** A sandbox subscription (`sub_…`) with its single item. Unix-second timestamps. */
@Entity('sandbox_subscriptions')
@Index('sandbox_subscriptions_customer_idx', ['customerId'])
export class SandboxSubscription {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_subscriptions_pkey' })
  id: string;

  @Column('text', { name: 'customer_id' })
  @ForeignKey(() => SandboxCustomer, { name: 'sandbox_subscriptions_customer_id_fkey', onDelete: 'NO ACTION' })
  customerId: string;

  @Column('text', { name: 'item_id' })
  itemId: string;

  @Column('text')
  tier: string;

  /** A provider subscription status: active, canceled, … */
  @Column('text')
  status: string;

  @Column('jsonb')
  metadata: Record<string, string>;

  @Column('bigint')
  created: number;

  @Column('bigint', { name: 'current_period_start' })
  currentPeriodStart: number;

  @Column('bigint', { name: 'current_period_end' })
  currentPeriodEnd: number;

  @Column('bigint', { name: 'canceled_at', nullable: true })
  canceledAt: number | null;

  /** `created` of the last event emitted for this subscription. */
  @Column('bigint', { name: 'last_event_created' })
  lastEventCreated: number;
}
