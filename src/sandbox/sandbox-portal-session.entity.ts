import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A sandbox billing-portal session (`bps_…`). Unix-second timestamps. */
@Entity('sandbox_portal_sessions')
export class SandboxPortalSession {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'sandbox_portal_sessions_pkey' })
  id: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  @Column('text', { name: 'return_url' })
  returnUrl: string;

  @Column('bigint')
  created: number;

  @Column('bigint', { name: 'expires_at' })
  expiresAt: number;
}
