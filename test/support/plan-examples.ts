/** spec §11.1's example TIERS_FILE: a trial, per-seat users, an overage that bills, a further metric. */
export const SPEC_PLAN_EXAMPLE = {
  free: { projects: 3, ai_tokens: 100000, users: 3 },
  pro: { projects: 25, ai_tokens: 2000000, users: 10, trial_days: 14, features: { api_access: true } },
  team: {
    projects: 100,
    ai_tokens: { limit: 10000000, overage: 'bill' },
    users: { per_seat: true, max: 500 },
    features: { api_access: true, audit_log: true },
    metrics: { storage_gb: 100 },
  },
};
