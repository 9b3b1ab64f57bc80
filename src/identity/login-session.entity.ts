import { Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { User } from './user.entity';

/** A login session. Only the SHA-256 of its token is stored, so a database leak yields no usable token. */
@Entity('sessions')
@Unique('sessions_token_hash_key', ['tokenHash'])
@Index('sessions_user_idx', ['userId'])
export class LoginSession {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'sessions_pkey' })
  id: string;

  @Column('bytea', { name: 'token_hash' })
  tokenHash: Buffer;

  @Column('uuid', { name: 'user_id' })
  @ForeignKey(() => User, { name: 'sessions_user_id_fkey', onDelete: 'CASCADE' })
  userId: string;

  @Column('timestamptz', { name: 'expires_at' })
  expiresAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
