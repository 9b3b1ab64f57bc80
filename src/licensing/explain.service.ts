import { Injectable } from '@nestjs/common';
import { notAMember } from '../common/app-exception';
import { organisationNotFound } from '../identity/identity.service';
import { TierSource } from '../subscriptions/tier-resolution';
import { LedgerStatus } from '../provider/provider-event';
import { ExplainGrant, ExplainResponse, ExplainStep } from './explain.dto';
import { ExplainRepository, ExplainRow } from './explain.repository';
import { overrideRecord, readsOverrideNotes } from './entitlements.service';

/** Why an organisation has the license it has (spec §12), for support: GET /api/licensing/explain. */
@Injectable()
export class ExplainService {
  constructor(private readonly repository: ExplainRepository) {}

  /** `userId` null: a service-key caller (404 for an unknown organisation); else members only (403). */
  async explain(organisationId: string, userId: string | null): Promise<ExplainResponse> {
    const row = await this.repository.explain(organisationId, userId);
    if (!row.allowed) throw userId ? notAMember() : organisationNotFound(organisationId);
    const withNotes = userId === null || readsOverrideNotes(row.role);
    const planVersion = row.planVersion && { version: row.planVersion.version, recorded_at: new Date(row.planVersion.recordedAt).toISOString() };
    return { tier: row.tier, is_active: row.isActive, is_expired: row.isExpired, plan_version: planVersion, because: steps(row, withNotes), grants: row.grants.map(grant) };
  }
}

const iso = (at: string | null) => (at === null ? null : new Date(at).toISOString());

function grant(g: ExplainRow['grants'][number]): ExplainGrant {
  return { ...g, category: g.category as ExplainGrant['category'], source: g.source as ExplainGrant['source'], effective_at: iso(g.effective_at)!, expires_at: iso(g.expires_at) };
}

/** The row as the chain of steps, newest first (see ExplainResponse.because). */
function steps(row: ExplainRow, withNotes: boolean): ExplainStep[] {
  const { chosen, grace } = row;
  const because: ExplainStep[] = row.overrides.map((o) => ({ kind: 'override' as const, ...overrideRecord(o, withNotes) }));
  if (chosen && grace) {
    because.push({ kind: 'grace', subscription_id: chosen.id, past_due_since: grace.since, ends_at: grace.endsAt, in_grace: grace.inGrace });
  }
  if (chosen) {
    because.push({ kind: 'subscription', id: chosen.id, status: chosen.status!, tier: chosen.tier!, tier_source: chosen.tierSource as TierSource | null });
    for (const e of row.events) {
      because.push({ kind: 'event', id: e.id, type: e.type, created: e.created, outcome: e.status as LedgerStatus, reason: e.reason });
    }
  } else {
    const reason = row.others.length
      ? 'no subscription can shape the license (see each one below): the free tier applies'
      : 'the organisation has no subscription: the free tier applies';
    because.push({ kind: 'no_subscription', reason });
  }
  for (const other of row.others) {
    because.push({ kind: 'not_chosen', id: other.id, status: other.status, tier: other.tier, reason: other.reason });
  }
  return because;
}
