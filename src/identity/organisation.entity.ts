import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, Unique } from 'typeorm';

@Entity('organisations')
@Unique('organisations_provider_customer_id_key', ['providerCustomerId'])
export class Organisation {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'organisations_pkey' })
  id: string;

  @Column('text')
  name: string;

  /** The payment provider's customer id (`cus_…`): the organisation's "customer record". Unique. */
  @Column('text', { name: 'provider_customer_id', nullable: true })
  providerCustomerId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
