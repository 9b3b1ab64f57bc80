import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { SandboxPlan } from './provider-events';

/**
 * A sandbox subscription schedule (`sub_sched_…`): the subscription's current plan until `changeAt` (its
 * period's end), then `next`. Unix-second timestamps on the subscription's clock.
 */
@Entity('sandbox_subscription_schedules')
@Index('sandbox_subscription_schedules_subscription_idx', ['subscriptionId'])
@Check('sandbox_subscription_schedules_status_check', `status IN ('active', 'released', 'canceled')`)
export class SandboxSchedule {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_subscription_schedules_pkey' })
  id: string;

  @Column('text', { name: 'subscription_id' })
  subscriptionId: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  @Column('bigint')
  created: number;

  @Column('jsonb')
  current: SandboxPlan;

  @Column('jsonb')
  next: SandboxPlan;

  @Column('bigint', { name: 'phase_start' })
  phaseStart: number;

  @Column('bigint', { name: 'change_at' })
  changeAt: number;

  @Column('text', { default: 'active' })
  status: 'active' | 'released' | 'canceled';

  @Column('bigint', { name: 'released_at', nullable: true })
  releasedAt: number | null;
}
