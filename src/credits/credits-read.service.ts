import { Injectable } from '@nestjs/common';
import { notAMember, unauthenticated } from '../common/app-exception';
import type { QueryCaller } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import { perPeriodMetrics } from '../config/tiers';
import { organisationNotFound } from '../identity/identity.service';
import { CreditMetric, CreditsResponse, LedgerPage } from './credits-routes.dto';
import { CreditMetricRow, CreditsRepository, ReadCaller } from './credits.repository';
import { autoRechargeRecord, grantRecord } from './credits.service';

const DEFAULT_LEDGER_PAGE = 20;

/**
 * The credits reads (spec §16.2), each one round trip that also checks the caller (as the entitlements read: a
 * session token verified by the statement, 401; a user must be a member, 403; a service key reads any
 * organisation that exists, else 404): an organisation's credits metrics with their balances and grants, and
 * its ledger.
 */
@Injectable()
export class CreditsReadService {
  /** The metrics counted per period, in table order: the only ones a credits policy can name. */
  private readonly metrics: readonly string[];

  constructor(
    private readonly repository: CreditsRepository,
    config: AppConfig,
  ) {
    this.metrics = perPeriodMetrics(config.tiers);
  }

  async credits(organisationId: string, caller: QueryCaller): Promise<CreditsResponse> {
    const row = await this.repository.read(organisationId, readCaller(caller), this.metrics);
    allowOrThrow(organisationId, caller, row);
    return { data: row.metrics.map(creditMetric) };
  }

  async ledger(
    organisationId: string,
    caller: QueryCaller,
    query: { metric?: string; limit?: number; starting_after?: string },
  ): Promise<LedgerPage> {
    const limit = query.limit ?? DEFAULT_LEDGER_PAGE;
    const row = await this.repository.ledger(organisationId, readCaller(caller), {
      metric: query.metric ?? null,
      startingAfter: query.starting_after ?? null,
      limit: limit + 1,
    });
    allowOrThrow(organisationId, caller, row);
    const entries = row.entries ?? [];
    return {
      data: entries.slice(0, limit).map((e) => ({
        id: e.id,
        at: new Date(e.at).toISOString(),
        metric: e.metric,
        kind: e.kind,
        amount: e.amount,
        grant_id: e.grantId,
        balance_after: e.balanceAfter,
        reference: e.reference,
      })),
      has_more: entries.length > limit,
    };
  }
}

function readCaller(caller: QueryCaller): ReadCaller {
  if (caller.serviceKey !== undefined) return {};
  return caller.userId !== undefined ? { userId: caller.userId } : { sessionTokenHash: caller.sessionTokenHash };
}

function allowOrThrow(organisationId: string, caller: QueryCaller, row: { authenticated: boolean; allowed: boolean }): void {
  if (!row.authenticated) throw unauthenticated();
  if (!row.allowed) throw caller.serviceKey !== undefined ? organisationNotFound(organisationId) : notAMember();
}

/** A credits metric as the read shows it: `available` = what is left of the included amount + balance − reserved. */
function creditMetric(m: CreditMetricRow): CreditMetric {
  const grants = m.grants.map(grantRecord);
  const balance = grants.reduce((sum, g) => sum + g.remaining, 0);
  const remaining = Math.max(m.limit - m.used, 0);
  return {
    metric: m.metric,
    policy: 'credits',
    included: { limit: m.limit, used: m.used, remaining },
    balance,
    reserved: m.reserved,
    available: remaining + balance - m.reserved,
    grants,
    auto_recharge: m.autoRecharge ? autoRechargeRecord(m.autoRecharge) : null,
  };
}
