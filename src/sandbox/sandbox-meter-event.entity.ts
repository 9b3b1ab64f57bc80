import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A billing meter event the sandbox received (spec §13), one per identifier, as the provider keeps them. */
@Entity('sandbox_meter_events')
@Index('sandbox_meter_events_customer_idx', ['customerId', 'timestamp'])
export class SandboxMeterEvent {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_meter_events_pkey' })
  identifier: string;

  @Column('text', { name: 'event_name' })
  eventName: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  @Column('bigint')
  value: number;

  /** Unix seconds: the usage's time, as reported. */
  @Column('bigint')
  timestamp: number;
}
