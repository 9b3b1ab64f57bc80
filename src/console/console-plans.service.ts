import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { FREE_TIER } from '../config/tiers';
import { transaction } from '../database/transaction';
import { PlanMigrationsService } from '../licensing/plan-migrations.service';
import { MigrationPreview, MigrationRead, PlanVersionList } from '../licensing/plans.dto';
import { PlansService } from '../licensing/plans.service';
import type { Operator } from './console-auth.service';
import type { Flash } from './console-views';
import { ConsoleRepository } from './console.repository';

/** The organisations the plans page shows of a preview: the first ones, as the SPEC's console shows them. */
export const PREVIEW_ROWS = 20;

/** A migration asked for on the plans page: the tier, and the versions as the operator chose them (none: the defaults). */
export interface MigrationChoice {
  tier: string;
  fromVersion?: number;
  toVersion?: number;
}

export interface PlansPage {
  plans: PlanVersionList;
  /** The tiers a migration can move (those with versions, free aside). */
  tiers: string[];
  choice?: MigrationChoice;
  /** The preview of `choice`, with the organisations' names; or why it was refused. */
  preview?: MigrationPreview & { names: Record<string, string> };
  problem?: string;
  migration?: MigrationRead;
}

/**
 * The console's plans page (spec §17): each tier's versions with their live subscriptions, the migration
 * preview of a chosen tier and versions, and the migration itself, started as the operator through the
 * licensing module's services (the admin routes' own), and audited as `plan.migration_started`.
 */
@Injectable()
export class ConsolePlansService {
  constructor(
    private readonly plans: PlansService,
    private readonly migrations: PlanMigrationsService,
    private readonly repository: ConsoleRepository,
    private readonly audit: AuditService,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  async page(choice: MigrationChoice | undefined, migrationId: string | undefined): Promise<PlansPage> {
    const [plans, migration] = await Promise.all([this.plans.list(), migrationId ? this.migrations.get(migrationId) : undefined]);
    const page: PlansPage = { plans, tiers: plans.data.map((t) => t.tier).filter((t) => t !== FREE_TIER), choice, migration };
    if (!choice) return page;
    try {
      const preview = await this.plans.preview(choice.tier, versions(choice), { limit: PREVIEW_ROWS, startingAfter: null });
      const { organisations } = await this.repository.labels(preview.data.map((r) => r.organisation_id), []);
      return { ...page, preview: { ...preview, names: Object.fromEntries(organisations) } };
    } catch (err) {
      if (err instanceof AppException && err.getStatus() < 500) return { ...page, problem: err.message };
      throw err;
    }
  }

  /**
   * Starts the migration (refused as the admin route refuses it: an unknown tier or version, a range going back,
   * the free tier, one already running for the tier); answers where its state is shown.
   */
  async migrate(choice: MigrationChoice, at: 'now' | 'period_end', operator: Operator): Promise<{ flash: Flash; migrationId?: string }> {
    let started: MigrationRead;
    try {
      started = await this.migrations.start(choice.tier, { ...versions(choice), at }, operator.actor);
    } catch (err) {
      if (err instanceof AppException && err.getStatus() < 500) return { flash: { kind: 'refused', text: `Refused: ${err.message}` } };
      throw err;
    }
    const { id, tier, from_version, to_version, total } = started;
    await transaction(this.db, (m) =>
      this.audit.record(m, operator.actor, { action: 'plan.migration_started', organisationId: null, after: { migration_id: id, tier, from_version, to_version, at, total } }),
    );
    const when = at === 'now' ? 'now' : 'each at the end of its current period';
    const from = from_version === null ? 'every older version' : `version ${from_version}`;
    return {
      flash: { kind: 'done', text: `Migration started: ${total} ${tier} subscription${total === 1 ? '' : 's'} from ${from} to version ${to_version}, ${when}.` },
      migrationId: id,
    };
  }
}

function versions(choice: MigrationChoice): { from_version?: number; to_version?: number } {
  return {
    ...(choice.fromVersion === undefined ? {} : { from_version: choice.fromVersion }),
    ...(choice.toVersion === undefined ? {} : { to_version: choice.toVersion }),
  };
}
