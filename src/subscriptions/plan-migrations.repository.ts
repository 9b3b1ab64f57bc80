import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { preparedQuery } from '../database/prepared';

/** The job that runs a migration (any instance; its key keeps one waiting per migration). */
export const PLAN_MIGRATION_TASK = 'plan_migration';

/** A migration as its read shows it (spec §17). */
export interface MigrationRead {
  id: string;
  tier: string;
  from_version: number | null;
  to_version: number;
  at: 'now' | 'period_end';
  status: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
  errors: { subscription_id: string; message: string }[];
  created_at: string;
  finished_at: string | null;
}

/** What a run needs of its migration. */
export interface RunningMigration {
  id: string;
  tier: string;
  toVersion: number;
  at: 'now' | 'period_end';
  actor: string;
  requestId: string | null;
}

/** A subscription claimed for a move. */
export interface ClaimedItem {
  subscriptionId: string;
  organisationId: string;
  fromVersion: number;
  attempts: number;
}

const addJob = (id: string, runAt = 'now()') =>
  `graphile_worker.add_job('${PLAN_MIGRATION_TASK}', json_build_object('migration_id', ${id}), run_at => ${runAt},
     job_key => '${PLAN_MIGRATION_TASK}:' || ${id}, job_key_mode => 'replace', max_attempts => 1000)`;

// The migration and its subscriptions, in one statement: those the preview counts (live, of the tier, on an older
// version or on from_version). Nothing when one runs for the tier already (the partial unique index).
const CREATE_SQL = `
  WITH m AS (
    INSERT INTO plan_migrations (tier, from_version, to_version, at, actor, request_id)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (tier) WHERE status = 'running' DO NOTHING
    RETURNING id
  ),
  i AS (
    INSERT INTO plan_migration_items (migration_id, subscription_id, organisation_id, from_version)
    SELECT m.id, l.subscription_id, l.organisation_id, l.plan_version
    FROM m CROSS JOIN subscriptions.live_on_versions($7::bigint) l
    WHERE l.tier = $1 AND l.plan_version < $3::int AND ($2::int IS NULL OR l.plan_version = $2::int)
    RETURNING 1
  )
  SELECT m.id, (SELECT count(*) FROM i)::int AS total FROM m`;

const QUEUE_SQL = `SELECT (${addJob('$1::uuid')}).id`;

// Takes the run for `$2` seconds when nobody holds it, or renews it for the holder (`$3`: the lease it holds, to the
// millisecond, as a JavaScript Date keeps it).
const LEASE_SQL = `
  UPDATE plan_migrations SET lease_until = date_trunc('milliseconds', clock_timestamp() + make_interval(secs => $2))
  WHERE id = $1 AND status = 'running' AND (lease_until IS NULL OR lease_until < now() OR lease_until = $3::timestamptz)
  RETURNING lease_until AS "leaseUntil", tier, to_version AS "toVersion", at, actor, request_id AS "requestId"`;

const RELEASE_SQL = `
  WITH r AS (UPDATE plan_migrations SET lease_until = NULL WHERE id = $1 AND lease_until = $2::timestamptz RETURNING id)
  UPDATE plan_migration_items SET claimed_until = NULL WHERE migration_id IN (SELECT id FROM r) AND status = 'pending'`;

// A batch of its pending subscriptions that no run has claimed (or whose run stopped), claimed for `$3` seconds.
const CLAIM_SQL = `
  UPDATE plan_migration_items i SET claimed_until = now() + make_interval(secs => $3)
  FROM (
    SELECT subscription_id FROM plan_migration_items
    WHERE migration_id = $1 AND status = 'pending' AND (claimed_until IS NULL OR claimed_until < now())
    ORDER BY subscription_id LIMIT $2 FOR UPDATE SKIP LOCKED
  ) c
  WHERE i.migration_id = $1 AND i.subscription_id = c.subscription_id
  RETURNING i.subscription_id AS "subscriptionId", i.organisation_id AS "organisationId", i.from_version AS "fromVersion", i.attempts`;

const SETTLE_SQL = `
  UPDATE plan_migration_items SET status = $3, error = $4, claimed_until = NULL, finished_at = now()
  WHERE migration_id = $1 AND subscription_id = $2 AND status = 'pending'
  RETURNING 1 AS settled`;

const RETRY_SQL = `
  UPDATE plan_migration_items SET attempts = attempts + 1, error = $3, claimed_until = now() + make_interval(secs => $4)
  WHERE migration_id = $1 AND subscription_id = $2 AND status = 'pending'`;

// Done when nothing is pending: failed when some subscription could not be moved.
const FINISH_SQL = `
  UPDATE plan_migrations m
  SET status = CASE WHEN EXISTS (SELECT 1 FROM plan_migration_items i WHERE i.migration_id = m.id AND i.status = 'failed') THEN 'failed' ELSE 'done' END,
      finished_at = now(), lease_until = NULL
  WHERE m.id = $1 AND m.status = 'running'
    AND NOT EXISTS (SELECT 1 FROM plan_migration_items i WHERE i.migration_id = m.id AND i.status = 'pending')
  RETURNING m.status`;

// Running migrations nobody holds (their run stopped with its instance): a job for each.
const REQUEUE_SQL = `
  SELECT count(j.id)::int AS n
  FROM plan_migrations m, LATERAL ${addJob('m.id')} AS j
  WHERE m.status = 'running' AND (m.lease_until IS NULL OR m.lease_until < now())`;

const READ_SQL = `
  SELECT m.id, m.tier, m.from_version, m.to_version, m.at, m.status,
         coalesce(c.total, 0)::int AS total, coalesce(c.done, 0)::int AS done, coalesce(c.failed, 0)::int AS failed,
         coalesce((SELECT json_agg(json_build_object('subscription_id', e.subscription_id, 'message', e.error) ORDER BY e.finished_at, e.subscription_id)
                   FROM (SELECT subscription_id, error, finished_at FROM plan_migration_items
                         WHERE migration_id = m.id AND status = 'failed' ORDER BY finished_at, subscription_id LIMIT 20) e), '[]') AS errors,
         to_json(m.created_at) #>> '{}' AS created_at, to_json(m.finished_at) #>> '{}' AS finished_at
  FROM plan_migrations m
  LEFT JOIN LATERAL (
    SELECT count(*) AS total, count(*) FILTER (WHERE status = 'done') AS done, count(*) FILTER (WHERE status = 'failed') AS failed
    FROM plan_migration_items WHERE migration_id = m.id
  ) c ON true
  WHERE m.id = $1`;

/** Every query of plan_migrations and plan_migration_items (see their entities). */
@Injectable()
export class PlanMigrationsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The migration with its subscriptions, and its job; undefined when one runs for the tier already. */
  async create(
    m: EntityManager,
    p: { tier: string; fromVersion: number | null; toVersion: number; at: string; actor: string; requestId: string | null; graceS: number },
  ): Promise<{ id: string; total: number } | undefined> {
    const [row] = await preparedQuery<{ id: string; total: number }>(m, CREATE_SQL, [p.tier, p.fromVersion, p.toVersion, p.at, p.actor, p.requestId, p.graceS]);
    if (!row) return undefined;
    if (row.total === 0) await preparedQuery(m, FINISH_SQL, [row.id]);
    else await preparedQuery(m, QUEUE_SQL, [row.id]);
    return row;
  }

  async read(id: string): Promise<MigrationRead | undefined> {
    const [row] = await preparedQuery<MigrationRead>(this.db, READ_SQL, [id]);
    return row;
  }

  /** Takes (or renews, with `held`) the run's lease; undefined when another run holds it or it is over. */
  async lease(id: string, seconds: number, held: Date | null): Promise<(RunningMigration & { leaseUntil: Date }) | undefined> {
    const [row] = await preparedQuery<Omit<RunningMigration, 'id'> & { leaseUntil: Date }>(this.db, LEASE_SQL, [id, seconds, held?.toISOString() ?? null]);
    return row && { id, ...row };
  }

  /** Lets go of the run and of its claims, so that any instance takes it over at once. */
  async release(id: string, held: Date): Promise<void> {
    await preparedQuery(this.db, RELEASE_SQL, [id, held.toISOString()]);
  }

  /** A job for the migration at `runAt` (a waiting one is moved there). */
  async queue(id: string, runAt: Date): Promise<void> {
    await this.db.query(`SELECT (${addJob('$1::uuid', '$2::timestamptz')}).id`, [id, runAt.toISOString()]);
  }

  claim(id: string, limit: number, seconds: number): Promise<ClaimedItem[]> {
    return preparedQuery<ClaimedItem>(this.db, CLAIM_SQL, [id, limit, seconds]);
  }

  /** Marks it done or failed, once: false when it was no longer pending (another run settled it). */
  async settle(m: EntityManager, id: string, subscriptionId: string, status: 'done' | 'failed', error: string | null): Promise<boolean> {
    return (await preparedQuery(m, SETTLE_SQL, [id, subscriptionId, status, error])).length > 0;
  }

  async retryLater(id: string, subscriptionId: string, error: string, afterS: number): Promise<void> {
    await preparedQuery(this.db, RETRY_SQL, [id, subscriptionId, error, afterS]);
  }

  /** Ends the migration when nothing is pending; answers its final status, else undefined. */
  async finish(id: string): Promise<string | undefined> {
    const [row] = await preparedQuery<{ status: string }>(this.db, FINISH_SQL, [id]);
    return row?.status;
  }

  async requeueUnheld(): Promise<number> {
    const [row] = await preparedQuery<{ n: number }>(this.db, REQUEUE_SQL, []);
    return row.n;
  }
}
