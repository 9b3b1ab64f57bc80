import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { isDeepStrictEqual } from 'node:util';
import { DataSource, EntityManager } from 'typeorm';
import { AuditActor, AuditService } from '../audit/audit.service';
import { AppException } from '../common/app-exception';
import { transaction } from '../database/transaction';
import { organisationNotFound, UUID } from '../identity/identity.service';
import { GrantCategory } from './credit-grant.entity';
import { GrantBody } from './credits-routes.dto';
import { CreditGrantRecord } from './credits.dto';
import { CreditsRepository, GrantRow } from './credits.repository';
import { CreditsService, grantRecord } from './credits.service';

/** What an admin grant's idempotency key stands for: its body, defaults filled in, times in ISO 8601 (UTC). */
interface GrantRequest {
  metric: string;
  amount: number;
  category: GrantCategory;
  priority: number;
  effective_at: string | null;
  expires_at: string | null;
  note: string | null;
}

const DEFAULT_CATEGORY: GrantCategory = 'promotional';
const DEFAULT_PRIORITY = 50;

/** What an audit entry keeps of a grant. */
const audited = (g: CreditGrantRecord) => ({ ...g });

/**
 * Grants given and voided by an operator (spec §16.2): `POST /api/admin/organisations/{id}/credits/grants` (and the
 * CLI's credits:grant) and `…/grants/{grant_id}/void`. Each change is audited in its transaction; a refused one
 * writes nothing.
 */
@Injectable()
export class CreditsAdminService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly credits: CreditsService,
    private readonly repository: CreditsRepository,
    private readonly audit: AuditService,
  ) {}

  /**
   * A grant once per idempotency key: the first call makes it (`created`), the same key with the same body answers
   * it again, with another body 409 `idempotency_conflict`. Values out of range → 400; an unknown organisation → 404.
   */
  async grant(by: AuditActor, organisationId: string, body: GrantBody): Promise<{ grant: CreditGrantRecord; created: boolean }> {
    // Callers without the routes' pipes (the console, the CLI) may pass any text: never an id PostgreSQL refuses.
    if (!UUID.test(organisationId)) throw organisationNotFound(organisationId);
    this.credits.checkMetric(body.metric);
    const request = requestOf(body);
    return transaction(this.db, async (m) => {
      const earlier = await this.repository.findGrantByReference(m, organisationId, 'admin', body.idempotency_key);
      if (earlier) return { grant: sameRequest(earlier, request), created: false };
      await this.requireOrganisation(m, organisationId);
      const made = await this.credits.grant(m, {
        organisationId,
        metric: request.metric,
        amount: request.amount,
        category: request.category,
        priority: request.priority,
        source: 'admin',
        reference: body.idempotency_key,
        effectiveAt: request.effective_at === null ? undefined : new Date(request.effective_at),
        expiresAt: request.expires_at === null ? null : new Date(request.expires_at),
        note: request.note,
        request: { ...request },
        ledgerReference: by.actor,
      });
      if (!made.created) {
        // A concurrent request with the same key made it first (and committed): answered as a repeat.
        const stored = await this.repository.findGrantByReference(m, organisationId, 'admin', body.idempotency_key);
        return { grant: sameRequest(stored!, request), created: false };
      }
      await this.audit.record(m, by, { action: 'credit_grant.created', organisationId, after: audited(made.grant) });
      return made;
    });
  }

  /**
   * Voids a grant: what was left written off with a `void` ledger entry, `remaining` 0. A grant voided before is
   * answered unchanged (and nothing is recorded). Another organisation's grant, or none: 404 `grant_not_found`.
   */
  async void(by: AuditActor, organisationId: string, grantId: string): Promise<CreditGrantRecord> {
    if (!UUID.test(organisationId)) throw organisationNotFound(organisationId);
    if (!UUID.test(grantId)) throw grantNotFound(grantId);
    return transaction(this.db, async (m) => {
      const grant = await this.repository.lockGrant(m, organisationId, grantId);
      if (!grant) {
        await this.requireOrganisation(m, organisationId);
        throw grantNotFound(grantId);
      }
      if (grant.voidedAt !== null) return grantRecord(grant);
      const voided = grantRecord(await this.repository.voidGrant(m, grant, by.actor));
      await this.audit.record(m, by, { action: 'credit_grant.voided', organisationId, before: audited(grantRecord(grant)), after: audited(voided) });
      return voided;
    });
  }

  private async requireOrganisation(m: EntityManager, organisationId: string): Promise<void> {
    if (!(await this.repository.organisationExists(m, organisationId))) throw organisationNotFound(organisationId);
  }
}

const grantNotFound = (grantId: string) => new AppException('grant_not_found', `The organisation has no credit grant ${grantId}.`);

function requestOf(body: GrantBody): GrantRequest {
  const iso = (at: string | undefined) => (at === undefined ? null : new Date(at).toISOString());
  return {
    metric: body.metric,
    amount: body.amount,
    category: body.category ?? DEFAULT_CATEGORY,
    priority: body.priority ?? DEFAULT_PRIORITY,
    effective_at: iso(body.effective_at),
    expires_at: iso(body.expires_at),
    note: body.note ?? null,
  };
}

/** The grant an idempotency key made, when `request` is what made it; else 409. */
function sameRequest(grant: GrantRow, request: GrantRequest): CreditGrantRecord {
  if (!isDeepStrictEqual(grant.request, { ...request })) {
    throw new AppException('idempotency_conflict', 'This idempotency_key was already used for a grant with another body; use a new key for a new grant.');
  }
  return grantRecord(grant);
}
