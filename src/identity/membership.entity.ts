import { Check, Column, CreateDateColumn, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { Organisation } from './organisation.entity';
import { User } from './user.entity';

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

@Entity('memberships')
@Index('memberships_user_idx', ['userId'])
@Check('memberships_role_check', `role IN ('owner', 'admin', 'member')`)
export class Membership {
  @PrimaryColumn('uuid', { name: 'organisation_id', primaryKeyConstraintName: 'memberships_pkey' })
  @ForeignKey(() => Organisation, { name: 'memberships_organisation_id_fkey', onDelete: 'CASCADE' })
  organisationId: string;

  @PrimaryColumn('uuid', { name: 'user_id', primaryKeyConstraintName: 'memberships_pkey' })
  @ForeignKey(() => User, { name: 'memberships_user_id_fkey', onDelete: 'CASCADE' })
  userId: string;

  @Column('text')
  role: Role;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
