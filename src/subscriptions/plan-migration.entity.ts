import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/**
 * A migration of a tier's subscriptions to a plan version (spec §17): what it moves (its subscriptions are its
 * items, plan_migration_items), who started it, and where its run is. One runs per tier at a time (the partial
 * unique index). Its run holds a lease (`lease_until`) while it works, so one instance at a time moves its
 * subscriptions; a lease that ran out belongs to an instance that stopped, and any other takes the run over.
 * Written only by PlanMigrationsRepository.
 */
@Entity('plan_migrations')
@Index('plan_migrations_one_running_per_tier', ['tier'], { unique: true, where: `status = 'running'` })
@Check('plan_migrations_at_check', `"at" IN ('now', 'period_end')`)
@Check('plan_migrations_status_check', `status IN ('running', 'done', 'failed')`)
export class PlanMigration {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'plan_migrations_pkey' })
  id: string;

  @Column('text')
  tier: string;

  /** Only the subscriptions on this version; null: every version older than `to_version`. */
  @Column('integer', { name: 'from_version', nullable: true })
  fromVersion: number | null;

  @Column('integer', { name: 'to_version' })
  toVersion: number;

  /** `now`, or `period_end`: each subscription at the end of its current period. */
  @Column('text')
  at: 'now' | 'period_end';

  /** running, then done (every subscription moved) or failed (some could not be: see its items). */
  @Column('text', { default: 'running' })
  status: 'running' | 'done' | 'failed';

  /** Who started it and under which request (the audit's actor of each subscription moved). */
  @Column('text')
  actor: string;

  @Column('text', { name: 'request_id', nullable: true })
  requestId: string | null;

  /** Until when the instance running it holds it; null or past: free for any instance. */
  @Column('timestamptz', { name: 'lease_until', nullable: true })
  leaseUntil: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'finished_at', nullable: true })
  finishedAt: Date | null;
}
