import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreditsService, GrantInput } from '../../src/credits/credits.service';
import { transaction } from '../../src/database/transaction';
import type { TestApp } from './test-app';

/**
 * A tier table with credits (spec §16.1): free draws ai_tokens past 100 from grants and gpu_s (a further metric
 * counted per period) past 10; api_s is per period but blocked, bill_s per period and billed. pro includes more,
 * rolls 50 ai_tokens over, and sells nothing else.
 */
export const CREDITS_TABLE = {
  tiers: {
    free: {
      projects: 3,
      ai_tokens: { limit: 100, overage: 'credits' },
      users: 3,
      metrics: {
        gpu_s: { limit: 10, overage: 'credits', per_period: true },
        api_s: { limit: 10, per_period: true },
        bill_s: { limit: 10, overage: 'bill', per_period: true },
      },
    },
    pro: { projects: 25, ai_tokens: { limit: 1000, overage: 'credits', rollover: { max: 50 } }, users: 10 },
  },
  credit_packs: { tokens_1k: { metric: 'ai_tokens', amount: 1000 } },
};

export function creditsTiersFile(table: object = CREDITS_TABLE): string {
  const file = join(mkdtempSync(join(tmpdir(), 'credits-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

let references = 0;

/** A grant through the one grant function (a top-up by default), in its own transaction. */
export async function giveCredits(t: TestApp, organisationId: string, amount: number, more: Partial<GrantInput> = {}) {
  const input: GrantInput = {
    organisationId,
    metric: 'ai_tokens',
    amount,
    category: 'paid',
    source: 'top_up',
    reference: `cs_test_${process.pid}_${++references}`,
    ...more,
  };
  return (await transaction(t.db, (m) => t.app.get(CreditsService).grant(m, input))).grant;
}

/** Every grant's `amount` minus its consume, expire and void entries, against its `remaining` (spec §16.1). */
export async function ledgerMismatches(t: TestApp, organisationId: string): Promise<unknown[]> {
  return t.db.query(
    `SELECT g.id, g.amount, g.remaining, g.amount + COALESCE(sum(l.amount) FILTER (WHERE l.kind IN ('consume', 'expire', 'void')), 0) AS explained
     FROM credit_grants g LEFT JOIN credit_ledger l ON l.grant_id = g.id
     WHERE g.organisation_id = $1
     GROUP BY g.id
     HAVING g.amount + COALESCE(sum(l.amount) FILTER (WHERE l.kind IN ('consume', 'expire', 'void')), 0) <> g.remaining`,
    [organisationId],
  );
}
