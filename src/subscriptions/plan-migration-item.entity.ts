import { Check, Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { PlanMigration } from './plan-migration.entity';

/**
 * One subscription a migration moves (spec §17): pending until it is moved (done) or refused (failed, with the
 * provider's message), each exactly once. Taken by one run at a time (`claimed_until`, a lease: a claim that ran
 * out belongs to a run that stopped). Written only by PlanMigrationsRepository.
 */
@Entity('plan_migration_items')
@Index('plan_migration_items_status_idx', ['migrationId', 'status'])
@Check('plan_migration_items_status_check', `status IN ('pending', 'done', 'failed')`)
export class PlanMigrationItem {
  @PrimaryColumn('uuid', { name: 'migration_id', primaryKeyConstraintName: 'plan_migration_items_pkey' })
  @ForeignKey(() => PlanMigration, { name: 'plan_migration_items_migration_id_fkey', onDelete: 'CASCADE' })
  migrationId: string;

  @PrimaryColumn('text', { name: 'subscription_id', primaryKeyConstraintName: 'plan_migration_items_pkey' })
  subscriptionId: string;

  @Column('uuid', { name: 'organisation_id' })
  organisationId: string;

  /** The version it was on when the migration started. */
  @Column('integer', { name: 'from_version' })
  fromVersion: number;

  @Column('text', { default: 'pending' })
  status: 'pending' | 'done' | 'failed';

  /** Attempts that the provider could not answer (unavailable, rate-limited): after a few it is failed. */
  @Column('integer', { default: 0 })
  attempts: number;

  @Column('text', { nullable: true })
  error: string | null;

  @Column('timestamptz', { name: 'claimed_until', nullable: true })
  claimedUntil: Date | null;

  @Column('timestamptz', { name: 'finished_at', nullable: true })
  finishedAt: Date | null;
}
