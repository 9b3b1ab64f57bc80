import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

@Entity('memberships')
export class Membership {
  @PrimaryColumn('uuid', { name: 'organisation_id' })
  organisationId: string;

  @PrimaryColumn('uuid', { name: 'user_id' })
  userId: string;

  @Column('text')
  role: Role;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
