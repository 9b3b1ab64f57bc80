import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { PlanDefinition } from './plan-definition';

/**
 * A tier's definition as the tier table gave it at some start (spec §17): version 1 is the first seen, and each
 * start whose table defines the tier otherwise records the next one (PlanVersionsService). Never edited or
 * deleted (a trigger refuses both); a subscription's license comes from the version it is on.
 */
@Entity('plan_versions')
export class PlanVersion {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'plan_versions_pkey' })
  tier: string;

  @PrimaryColumn('integer', { primaryKeyConstraintName: 'plan_versions_pkey' })
  version: number;

  @Column('jsonb')
  definition: PlanDefinition;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
