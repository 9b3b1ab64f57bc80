import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * What one reconciliation run (spec §9) set aside while it walks the provider's lists, so that its memory
 * holds one page, not the account: the events the ledger lacks (the provider lists newest first; they are
 * applied oldest first from here once every page is walked), and the ids of the subscriptions the list
 * showed (the known ones it did not show are then fetched alone). A run deletes its rows when it ends;
 * rows of a run that died are deleted by a later run. Written only by SyncSpillRepository.
 */
@Entity('provider_sync_spill')
@Check('provider_sync_spill_kind_check', `kind IN ('event', 'subscription')`)
// The application order of a run's events (created, then rank, then the provider's order reversed).
@Index('provider_sync_spill_order_idx', ['runId', 'kind', 'created', 'rank', 'position'])
export class SyncSpillRow {
  @PrimaryColumn('uuid', { name: 'run_id', primaryKeyConstraintName: 'provider_sync_spill_pkey' })
  runId: string;

  @PrimaryColumn('text', { primaryKeyConstraintName: 'provider_sync_spill_pkey' })
  kind: 'event' | 'subscription';

  /** The provider's event or subscription id. */
  @PrimaryColumn('text', { primaryKeyConstraintName: 'provider_sync_spill_pkey' })
  id: string;

  /** An event's `created`, its rank among subscription events of one second, and minus its place in the list. */
  @Column('bigint', { nullable: true })
  created: number | null;

  @Column('smallint', { nullable: true })
  rank: number | null;

  @Column('integer', { nullable: true })
  position: number | null;

  /** The event as the provider listed it (JSON text, as the ledger keeps payloads). */
  @Column('text', { nullable: true })
  payload: string | null;

  @Column('timestamptz', { name: 'created_at', default: () => 'now()' })
  createdAt: Date;
}
