import { Injectable } from '@nestjs/common';
import type { AuditActor } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { PlanMigrationRuns } from '../subscriptions/plan-migration-runs';
import type { MigrationRead } from './plans.dto';
import { PlansService } from './plans.service';

/**
 * Plan migrations for operators (spec §17): a start, checked as the preview is (the tier, the versions), then run
 * by the subscriptions module on the job queue (PlanMigrationRuns); and its read. The admin route, the CLI and the
 * console start them here.
 */
@Injectable()
export class PlanMigrationsService {
  constructor(
    private readonly plans: PlansService,
    private readonly runs: PlanMigrationRuns,
  ) {}

  /**
   * Starts moving the tier's live subscriptions on `from_version` (default: every older version) to `to_version`
   * (default: the newest), `now` or at each one's period end; answers the migration as it starts. 400 as the
   * preview; 409 migration_running when one runs for the tier. Nothing is moved, audited or sent on a refusal.
   */
  async start(tier: string, body: { from_version?: number; to_version?: number; at: 'now' | 'period_end' }, by: AuditActor): Promise<MigrationRead> {
    const { fromVersion, toVersion } = await this.plans.range(tier, body);
    const started = await this.runs.start({ tier, fromVersion, toVersion, at: body.at, actor: by.actor, requestId: by.requestId });
    if (!started) throw new AppException('migration_running', `A migration of "${tier}" is running: wait for it to end.`);
    return this.get(started.id);
  }

  /** The migration: where it is, what it moved and what it could not. 404 for an unknown id. */
  async get(id: string): Promise<MigrationRead> {
    const row = await this.runs.read(id);
    if (!row) throw new AppException('plan_migration_not_found', `No plan migration ${id}.`);
    return { ...row, created_at: new Date(row.created_at).toISOString(), finished_at: row.finished_at && new Date(row.finished_at).toISOString() };
  }
}
