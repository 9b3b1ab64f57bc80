import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

/**
 * The sandbox provider's outbox: events are stored with the change that causes them, then delivered to our
 * own webhook in seq order; an undelivered event is retried by the page's "try again" button.
 */
@Entity('sandbox_events')
@Unique('sandbox_events_id_key', ['id'])
@Index('sandbox_events_pending_idx', ['sourceId', 'seq'], { where: 'delivered_at IS NULL' })
export class SandboxEvent {
  /** bigserial. */
  @PrimaryGeneratedColumn('increment', { type: 'bigint', primaryKeyConstraintName: 'sandbox_events_pkey' })
  seq: number;

  /** The event id (`evt_…`). */
  @Column('text')
  id: string;

  /** The checkout or portal session whose action caused the event; its page delivers them in seq order. */
  @Column('text', { name: 'source_id' })
  sourceId: string;

  @Column('text')
  type: string;

  @Column('jsonb')
  payload: object;

  @Column('timestamptz', { name: 'delivered_at', nullable: true })
  deliveredAt: Date | null;

  @Column('text', { name: 'last_error', nullable: true })
  lastError: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
