import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { takeAdvisoryLocks } from '../database/advisory-locks';
import { preparedQuery } from '../database/prepared';
import type { PlanDefinition } from './plan-definition';
import { PlanVersion } from './plan-version.entity';

/** A version just recorded. */
export interface RecordedVersion {
  tier: string;
  version: number;
}

// Each tier's definition becomes its next version when it differs from its newest (jsonb equality: the order of
// keys does not matter, the order of prices does). The caller holds the lock below, so a second instance starting
// at the same time reads the first one's versions in this statement's snapshot and records nothing; the key is the
// backstop.
const RECORD_SQL = `
  INSERT INTO plan_versions (tier, version, definition)
  SELECT d.key, COALESCE(n.version, 0) + 1, d.value
  FROM jsonb_each($1::jsonb) d
  LEFT JOIN LATERAL (SELECT p.version, p.definition FROM plan_versions p WHERE p.tier = d.key ORDER BY p.version DESC LIMIT 1) n ON true
  WHERE n.definition IS DISTINCT FROM d.value
  ON CONFLICT (tier, version) DO NOTHING
  RETURNING tier, version`;

// A subscription stored before its tier had a version (an instance of before plan versions, or the CLI before the
// first start) is on its tier's first: the table it was sold under is the one that start recorded.
const FIRST_SQL = `
  UPDATE provider_subscriptions s SET plan_version = 1
  WHERE s.plan_version IS NULL AND s.tier IS NOT NULL AND EXISTS (SELECT 1 FROM plan_versions p WHERE p.tier = s.tier AND p.version = 1)`;

/** Every query of plan_versions (see its entity): the only file with SQL for it. */
@Injectable()
export class PlanVersionsRepository {
  /** Records each definition that differs from its tier's newest version, under one lock for every instance. */
  async record(m: EntityManager, definitions: Record<string, PlanDefinition>): Promise<RecordedVersion[]> {
    await takeAdvisoryLocks(m, ['plan_versions']);
    const recorded = await preparedQuery<RecordedVersion>(m, RECORD_SQL, [JSON.stringify(definitions)]);
    await m.query(FIRST_SQL);
    return recorded;
  }

  /** Every version, by tier and version. */
  all(m: EntityManager): Promise<PlanVersion[]> {
    return m.getRepository(PlanVersion).find({ order: { tier: 'ASC', version: 'ASC' } });
  }

  /** One version of a tier, if recorded. */
  one(m: EntityManager, tier: string, version: number): Promise<PlanVersion | null> {
    return m.getRepository(PlanVersion).findOneBy({ tier, version });
  }
}
