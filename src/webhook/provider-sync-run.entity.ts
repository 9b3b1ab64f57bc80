import { Check, Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const SYNC_RUN_OUTCOMES = ['running', 'ok', 'failed'] as const;
export type SyncRunOutcome = (typeof SYNC_RUN_OUTCOMES)[number];

/**
 * One run of the reconciliation with the provider (spec §9), whoever started it, with its summary: what the
 * operator console's reconciliation page lists. Written only by ProviderSyncRunsRepository.
 */
@Entity('provider_sync_runs')
@Index('provider_sync_runs_started_idx', ['startedAt'])
@Check('provider_sync_runs_outcome_check', `outcome IN ('running', 'ok', 'failed')`)
export class ProviderSyncRun {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'provider_sync_runs_pkey' })
  id: string;

  /** Who started it: `schedule`, `cli:<os user>` or `operator:<email>` (the console). */
  @Column('text')
  trigger: string;

  @Column('timestamptz', { name: 'started_at', default: () => 'now()' })
  startedAt: Date;

  @Column('timestamptz', { name: 'finished_at', nullable: true })
  finishedAt: Date | null;

  @Column('text', { default: 'running' })
  outcome: SyncRunOutcome;

  /** The run's SyncSummary, once it finished. */
  @Column('jsonb', { nullable: true })
  summary: Record<string, number> | null;

  /** Why it stopped, when it failed (the provider unreachable, the database gone). */
  @Column('text', { nullable: true })
  error: string | null;
}
