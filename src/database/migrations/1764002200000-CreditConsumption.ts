import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Consumption and reservations (spec §16.1, §16.5). The tier table's definitions gain each tier's rollovers
 * (`licensing.tier_plan`, `licensing.plan_in_force`) and the metrics counted per period (`licensing.counter_period`
 * now takes the table: a further metric declared `per_period` counts per period like ai_tokens). Reservations get
 * their table, and credits the functions licensing's usage write calls in its one statement: the room a counter
 * has (fresh, under the counter's lock, with the grants locked), the consumption of grants in their order with a
 * ledger entry per report and grant, holds and commits.
 */
export class CreditConsumption1764002200000 implements MigrationInterface {
  name = 'CreditConsumption1764002200000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "usage_reservations" (
        "id" uuid NOT NULL DEFAULT gen_random_uuid(),
        "organisation_id" uuid NOT NULL,
        "metric" text NOT NULL,
        "amount" bigint NOT NULL,
        "status" text NOT NULL DEFAULT 'held',
        "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL,
        "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(),
        "settled_at" TIMESTAMP WITH TIME ZONE,
        "spent" bigint,
        "response" jsonb,
        CONSTRAINT "usage_reservations_status_check" CHECK (status IN ('held', 'expired', 'committed', 'released')),
        CONSTRAINT "usage_reservations_amount_check" CHECK (amount >= 1),
        CONSTRAINT "usage_reservations_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "usage_reservations_organisation_id_fkey" FOREIGN KEY ("organisation_id") REFERENCES "organisations"("id") ON DELETE CASCADE
      )`);
    await queryRunner.query(`CREATE INDEX "usage_reservations_held_idx" ON "usage_reservations" ("organisation_id", "metric") WHERE status = 'held'`);
    await queryRunner.query(`CREATE INDEX "usage_reservations_settled_idx" ON "usage_reservations" ("created_at")`);

    // licensing: a tier's rollovers (metric → the most carried into the next period), and the plan in force's.
    await queryRunner.query(`DROP FUNCTION licensing.tier_plan(jsonb, text)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.tier_plan(tiers jsonb, tier_name text)
      RETURNS TABLE (rank integer, per_seat boolean, limits jsonb, overage jsonb, features jsonb, rollover jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT (p ->> 'rank')::int, COALESCE((p ->> 'per_seat')::boolean, false), p -> 'limits', p -> 'overage', p -> 'features',
               COALESCE(p -> 'rollover', '{}')
        FROM (SELECT tiers -> tier_name AS p) t
      $$`);
    await queryRunner.query(`DROP FUNCTION licensing.plan_in_force(jsonb, text, boolean)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.plan_in_force(tiers jsonb, tier_name text, active boolean)
      RETURNS TABLE (tier_known boolean, per_seat boolean, tier_limits jsonb, limits jsonb, overage jsonb, features jsonb, rollover jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank IS NOT NULL, t.per_seat, t.limits, p.limits, p.overage, p.features, p.rollover
        FROM licensing.tier_plan(tiers, tier_name) t
        CROSS JOIN LATERAL licensing.tier_plan(tiers, CASE WHEN active AND t.rank IS NOT NULL THEN tier_name ELSE 'free' END) p
      $$`);
    // The usage counter period a metric counts in: a metric counted per period (ai_tokens, and those the table
    // declares per_period: its list, which every tier carries, read from free, which every table has) in the billing
    // period, any other as a gauge (0). A scalar expression, so that it is inlined.
    await queryRunner.query(`DROP FUNCTION licensing.counter_period(text, bigint)`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.counter_period(tiers jsonb, metric text, ai_period bigint) RETURNS bigint
      LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN metric = 'ai_tokens' OR COALESCE((tiers -> 'free' -> 'per_period') ? metric, false) THEN ai_period ELSE 0 END
      $$`);

    // credits: reservations.
    await queryRunner.query(`
      CREATE FUNCTION credits.live_holds(org uuid, metric_name text)
      RETURNS TABLE (id uuid, amount bigint, expires_at timestamptz)
      LANGUAGE sql STABLE AS $$
        SELECT r.id, r.amount, r.expires_at FROM usage_reservations r
        WHERE r.organisation_id = org AND r.metric = metric_name AND r.status = 'held' AND r.expires_at > now()
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION credits.reservation(reservation_id uuid)
      RETURNS TABLE (organisation_id uuid, metric text, amount bigint, expires_at timestamptz, status text, response jsonb)
      LANGUAGE sql STABLE AS $$
        SELECT r.organisation_id, r.metric, r.amount, r.expires_at, r.status, r.response FROM usage_reservations r WHERE r.id = reservation_id
      $$`);
    // What a counter's reports and holds may still take, read fresh (each statement of a VOLATILE function takes its
    // own snapshot) by the usage write once it holds the counter's row lock, so holds and grants committed while it
    // waited count: the live holds, which of `commits` are among them, and (with_balance) the balance of the grants
    // that count, whose rows it locks, in id order, until the transaction ends, so that no other writer draws on them
    // meanwhile. A grant that stopped counting after this snapshot (voided, expired by the job) has remaining 0 in the
    // locked row read here.
    await queryRunner.query(`
      CREATE FUNCTION credits.room(org uuid, metric_name text, with_balance boolean, commits uuid[])
      RETURNS TABLE (held bigint, balance bigint, live uuid[])
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        locked_balance bigint := 0;
      BEGIN
        IF with_balance THEN
          SELECT COALESCE(sum(l.remaining), 0) INTO locked_balance
          FROM (SELECT g.remaining FROM credit_grants g
                WHERE g.id IN (SELECT c.id FROM credits.counting_grants(org) c WHERE c.metric = metric_name)
                ORDER BY g.id FOR UPDATE OF g) l;
        END IF;
        RETURN QUERY
          SELECT COALESCE(sum(h.amount), 0)::bigint, locked_balance, COALESCE(array_agg(h.id) FILTER (WHERE h.id = ANY (commits)), '{}')
          FROM credits.live_holds(org, metric_name) h;
      END $$`);
    // Draws accepted usage from the grants that count (locked by credits.room in this transaction), in their order:
    // the events (in order; amounts > 0) take consecutive ranges of their metric's draw, the grants give consecutive
    // ranges of their remaining, and each overlap is one consume entry (the report's reference, the balance after
    // it). A draw the grants cannot cover is a bug of the caller, never an overdraft: it fails the statement.
    await queryRunner.query(`
      CREATE FUNCTION credits.consume(orgs uuid[], metrics text[], draws bigint[], refs text[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        written integer;
        uncovered bigint;
      BEGIN
        WITH ev AS (
          SELECT e.org, e.metric, e.draw, e.ref, e.n, sum(e.draw) OVER w - e.draw AS lo, sum(e.draw) OVER w AS hi
          FROM unnest(orgs, metrics, draws, refs) WITH ORDINALITY AS e(org, metric, draw, ref, n)
          WINDOW w AS (PARTITION BY e.org, e.metric ORDER BY e.n)
        ),
        grants AS (
          SELECT k.org, g.metric, g.id, g.draw_order, sum(g.remaining) OVER w - g.remaining AS lo, sum(g.remaining) OVER w AS hi,
                 sum(g.remaining) OVER (PARTITION BY k.org, g.metric) AS balance
          FROM (SELECT DISTINCT ev.org, ev.metric FROM ev) k
          CROSS JOIN LATERAL credits.counting_grants(k.org) g
          WHERE g.metric = k.metric
          WINDOW w AS (PARTITION BY k.org, g.metric ORDER BY g.draw_order)
        ),
        pieces AS (
          SELECT e.org, e.metric, e.ref, e.n, g.id, g.draw_order, g.balance, LEAST(e.hi, g.hi) - GREATEST(e.lo, g.lo) AS take
          FROM ev e JOIN grants g ON g.org = e.org AND g.metric = e.metric AND g.lo < e.hi AND e.lo < g.hi
        ),
        spent AS (
          UPDATE credit_grants c SET remaining = c.remaining - p.take
          FROM (SELECT pieces.id, sum(pieces.take) AS take FROM pieces GROUP BY pieces.id) p
          WHERE c.id = p.id
          RETURNING c.id
        ),
        entries AS (
          INSERT INTO credit_ledger (organisation_id, metric, kind, amount, grant_id, balance_after, reference)
          SELECT p.org, p.metric, 'consume', -p.take, p.id,
                 p.balance - sum(p.take) OVER (PARTITION BY p.org, p.metric ORDER BY p.n, p.draw_order), p.ref
          FROM pieces p ORDER BY p.org, p.metric, p.n, p.draw_order
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM entries), (SELECT COALESCE(sum(ev.draw), 0) FROM ev) - (SELECT COALESCE(sum(pieces.take), 0) FROM pieces)
        INTO written, uncovered;
        IF uncovered <> 0 THEN
          RAISE EXCEPTION 'credits.consume: % unit(s) of accepted usage not covered by the grants that count', uncovered;
        END IF;
        RETURN written;
      END $$`);
    // New holds (spec §16.5): the reservations the usage write accepted.
    await queryRunner.query(`
      CREATE FUNCTION credits.hold(ids uuid[], orgs uuid[], metrics text[], amounts bigint[], expires timestamptz[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        written integer;
      BEGIN
        INSERT INTO usage_reservations (id, organisation_id, metric, amount, expires_at)
        SELECT * FROM unnest(ids, orgs, metrics, amounts, expires);
        GET DIAGNOSTICS written = ROW_COUNT;
        RETURN written;
      END $$`);
    // Commits the usage write accepted: each reservation committed with what it spent and its answer (a repeat after
    // the usage key is gone answers it), and a release entry in the ledger for what a credits metric's live hold gave
    // back (`released` > 0, with the metric's balance after the commit). Only a reservation still held (or lapsed)
    // is committed: answers how many were, and the caller starts over when one was released or committed meanwhile.
    await queryRunner.query(`
      CREATE FUNCTION credits.settle_commits(ids uuid[], spent bigint[], responses jsonb[], released bigint[], balances bigint[]) RETURNS integer
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        settled integer;
      BEGIN
        WITH c AS (SELECT * FROM unnest(ids, spent, responses, released, balances) AS c(id, spent, response, released, balance)),
        done AS (
          UPDATE usage_reservations r SET status = 'committed', spent = c.spent, response = c.response, settled_at = now()
          FROM c WHERE r.id = c.id AND r.status IN ('held', 'expired')
          RETURNING r.id, r.organisation_id, r.metric
        ),
        entries AS (
          INSERT INTO credit_ledger (organisation_id, metric, kind, amount, balance_after, reference)
          SELECT d.organisation_id, d.metric, 'release', c.released, c.balance, c.id::text
          FROM done d JOIN c USING (id) WHERE c.released > 0
        )
        SELECT count(*) INTO settled FROM done;
        RETURN settled;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const f of [
      'credits.settle_commits(uuid[], bigint[], jsonb[], bigint[], bigint[])',
      'credits.hold(uuid[], uuid[], text[], bigint[], timestamptz[])',
      'credits.consume(uuid[], text[], bigint[], text[])',
      'credits.room(uuid, text, boolean, uuid[])',
      'credits.reservation(uuid)',
      'credits.live_holds(uuid, text)',
      'licensing.counter_period(jsonb, text, bigint)',
      'licensing.plan_in_force(jsonb, text, boolean)',
      'licensing.tier_plan(jsonb, text)',
    ]) {
      await queryRunner.query(`DROP FUNCTION ${f}`);
    }
    await queryRunner.query(`
      CREATE FUNCTION licensing.tier_plan(tiers jsonb, tier_name text)
      RETURNS TABLE (rank integer, per_seat boolean, limits jsonb, overage jsonb, features jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT (p ->> 'rank')::int, COALESCE((p ->> 'per_seat')::boolean, false), p -> 'limits', p -> 'overage', p -> 'features'
        FROM (SELECT tiers -> tier_name AS p) t
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.plan_in_force(tiers jsonb, tier_name text, active boolean)
      RETURNS TABLE (tier_known boolean, per_seat boolean, tier_limits jsonb, limits jsonb, overage jsonb, features jsonb)
      LANGUAGE sql IMMUTABLE AS $$
        SELECT t.rank IS NOT NULL, t.per_seat, t.limits, p.limits, p.overage, p.features
        FROM licensing.tier_plan(tiers, tier_name) t
        CROSS JOIN LATERAL licensing.tier_plan(tiers, CASE WHEN active AND t.rank IS NOT NULL THEN tier_name ELSE 'free' END) p
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION licensing.counter_period(metric text, ai_period bigint) RETURNS bigint
      LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN metric = 'ai_tokens' THEN ai_period ELSE 0 END $$`);
    await queryRunner.query(`DROP TABLE "usage_reservations"`);
  }
}
