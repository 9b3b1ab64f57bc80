import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { FREE_TIER, licenseArguments } from '../config/tiers';
import { AppException } from '../common/app-exception';
import { PlanVersionsService } from '../subscriptions/plan-versions.service';
import { MigrationPreview, PlanVersionList, MigrationPreviewBody } from './plans.dto';
import { PlansRepository } from './plans.repository';

/** The plan versions for operators (spec §17): each tier's versions with their live subscriptions, and the migration preview. */
@Injectable()
export class PlansService {
  constructor(
    private readonly repository: PlansRepository,
    private readonly versions: PlanVersionsService,
    private readonly config: AppConfig,
  ) {}

  /** Every tier with a version, in the table's order (tiers it no longer lists after, by name), oldest version first. */
  async list(): Promise<PlanVersionList> {
    const rows = await this.repository.versions(licenseArguments(this.config).graceS);
    const order = Object.keys(this.config.tiers);
    const tiers = [...new Set(rows.map((r) => r.tier))].sort((a, b) => rank(order, a) - rank(order, b) || a.localeCompare(b));
    return {
      data: tiers.map((tier) => ({
        tier,
        versions: rows
          .filter((r) => r.tier === tier)
          .map((r) => ({ version: r.version, created_at: new Date(r.created_at).toISOString(), subscriptions: r.subscriptions, definition: r.definition })),
      })),
    };
  }

  /**
   * What moving the tier's live subscriptions on `from_version` (default: every older version) to `to_version`
   * (default: the newest) would change, changing nothing. The free tier has no subscriptions to move.
   */
  async preview(tier: string, body: MigrationPreviewBody, page: { limit: number; startingAfter: string | null }): Promise<MigrationPreview> {
    const { fromVersion, toVersion } = await this.range(tier, body);
    return this.repository.preview({ ...licenseArguments(this.config), tier, fromVersion, toVersion, ...page });
  }

  /** The versions a migration of `tier` moves from and to, checked: refused before anything is read or changed. */
  async range(tier: string, body: MigrationPreviewBody): Promise<{ fromVersion: number | null; toVersion: number }> {
    if (tier === FREE_TIER) {
      throw new AppException('invalid_tier', `"${FREE_TIER}" has no subscriptions to migrate: the free tier always uses its newest version.`);
    }
    const recorded = (await this.versions.all()).filter((v) => v.tier === tier).map((v) => v.version);
    if (recorded.length === 0) throw new AppException('invalid_tier', `"${tier}" is not a tier with plan versions.`);
    const known = (version: number | undefined, field: string) => {
      if (version !== undefined && !recorded.includes(version)) {
        throw new AppException('unknown_plan_version', `${field} ${version} is not a version of "${tier}" (its versions: ${recorded.join(', ')}).`);
      }
    };
    known(body.from_version, 'from_version');
    known(body.to_version, 'to_version');
    const toVersion = body.to_version ?? Math.max(...recorded);
    if (body.from_version !== undefined && toVersion <= body.from_version) {
      throw new AppException('invalid_version_range', `to_version (${toVersion}) must be newer than from_version (${body.from_version}).`);
    }
    return { fromVersion: body.from_version ?? null, toVersion };
  }
}

function rank(order: string[], tier: string): number {
  const at = order.indexOf(tier);
  return at === -1 ? order.length : at;
}
