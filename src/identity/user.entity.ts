import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';

@Entity('users')
// The console finds members by part of their email: a trigram index (migration ConsoleSearchTrigram), which
// TypeORM cannot describe, so it leaves it alone.
@Index('users_email_trgm_idx', { synchronize: false })
@Unique('users_email_key', ['email'])
@Unique('users_external_id_key', ['externalId'])
@Check('users_external_id_check', `char_length(external_id) BETWEEN 1 AND 255`)
export class User {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'users_pkey' })
  id: string;

  /** Stored lower-case; unique. */
  @Column('text')
  email: string;

  /** The web app's own id for this user (spec §3): a JWT's `sub` names the user by it. Unique. */
  @Column('text', { name: 'external_id', nullable: true })
  externalId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
