import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

@Entity('organisations')
// The operator console lists organisations by name (keyset on name, id).
@Index('organisations_name_idx', ['name', 'id'])
// …and by part of the name: a trigram index (migration ConsoleSearchTrigram) TypeORM cannot describe.
@Index('organisations_name_trgm_idx', { synchronize: false })
@Unique('organisations_provider_customer_id_key', ['providerCustomerId'])
@Unique('organisations_external_id_key', ['externalId'])
@Check('organisations_external_id_check', `char_length(external_id) BETWEEN 1 AND 255`)
export class Organisation {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'organisations_pkey' })
  id: string;

  @Column('text')
  name: string;

  /** The payment provider's customer id (`cus_…`): the organisation's "customer record". Unique. */
  @Column('text', { name: 'provider_customer_id', nullable: true })
  providerCustomerId: string | null;

  /** The web app's own id for this organisation (spec §3), so it never has to store ours. Unique. */
  @Column('text', { name: 'external_id', nullable: true })
  externalId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
