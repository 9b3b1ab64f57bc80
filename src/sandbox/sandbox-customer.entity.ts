import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A customer of the sandbox payment provider (`cus_…`). Written through SandboxRepository. */
@Entity('sandbox_customers')
export class SandboxCustomer {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_customers_pkey' })
  id: string;

  /** Unix seconds. */
  @Column('bigint')
  created: number;
}
