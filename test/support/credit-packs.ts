import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A tier table that sells two packs of ai_tokens (spec §16.3). */
export const PACKS_TABLE = {
  tiers: {
    free: { projects: 3, ai_tokens: 100_000, users: 3 },
    pro: { projects: 25, ai_tokens: 2_000_000, users: 10 },
  },
  credit_packs: {
    tokens_1m: { metric: 'ai_tokens', amount: 1_000_000, expires_after_days: 365 },
    tokens_5m: { metric: 'ai_tokens', amount: 5_000_000 },
  },
};

export function packsTiersFile(table: object = PACKS_TABLE): string {
  const file = join(mkdtempSync(join(tmpdir(), 'packs-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}
