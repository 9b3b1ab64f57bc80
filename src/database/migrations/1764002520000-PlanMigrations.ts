import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plan migrations (spec §17): a migration of a tier's subscriptions to a plan version (plan_migrations, one running
 * per tier) and one row per subscription it moves (plan_migration_items, each moved once), run by the job queue.
 *
 * A migration at the period's end leaves the version to take over in `provider_subscriptions.next_plan_version`
 * (from `next_plan_version_at`, the end of the period it was made in). The trigger that keeps `plan_version`
 * (1764002410000-Grandfathering) gains that step, so that whatever writes the row (the renewal's event, the
 * reconciliation) puts it in force once a period at or after it has started; a change of tier still puts the
 * subscription on its new tier's newest version and drops a pending one. An update of the row that leaves its
 * tier as it is (the migration's own price update, as its event shows it) keeps the version the row has.
 */
export class PlanMigrations1764002520000 implements MigrationInterface {
  name = 'PlanMigrations1764002520000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE "plan_migrations" ("id" uuid NOT NULL DEFAULT gen_random_uuid(), "tier" text NOT NULL, "from_version" integer,
        "to_version" integer NOT NULL, "at" text NOT NULL, "status" text NOT NULL DEFAULT 'running', "actor" text NOT NULL, "request_id" text,
        "lease_until" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "finished_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "plan_migrations_status_check" CHECK (status IN ('running', 'done', 'failed')),
        CONSTRAINT "plan_migrations_at_check" CHECK ("at" IN ('now', 'period_end')),
        CONSTRAINT "plan_migrations_pkey" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "plan_migrations_one_running_per_tier" ON "plan_migrations"  ("tier") WHERE status = 'running'`);
    await queryRunner.query(`
      CREATE TABLE "plan_migration_items" ("migration_id" uuid NOT NULL, "subscription_id" text NOT NULL, "organisation_id" uuid NOT NULL,
        "from_version" integer NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "error" text,
        "claimed_until" TIMESTAMP WITH TIME ZONE, "finished_at" TIMESTAMP WITH TIME ZONE,
        CONSTRAINT "plan_migration_items_status_check" CHECK (status IN ('pending', 'done', 'failed')),
        CONSTRAINT "plan_migration_items_pkey" PRIMARY KEY ("migration_id", "subscription_id"))`);
    await queryRunner.query(`CREATE INDEX "plan_migration_items_status_idx" ON "plan_migration_items"  ("migration_id", "status") `);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "next_plan_version" integer`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" ADD "next_plan_version_at" bigint`);
    await queryRunner.query(`
      ALTER TABLE "plan_migration_items" ADD CONSTRAINT "plan_migration_items_migration_id_fkey" FOREIGN KEY ("migration_id")
        REFERENCES "plan_migrations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION provider_subscriptions_keep_plan_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.tier IS DISTINCT FROM OLD.tier THEN
          NEW.plan_version := (SELECT max(p.version) FROM plan_versions p WHERE p.tier = NEW.tier);
          NEW.next_plan_version := NULL;
          NEW.next_plan_version_at := NULL;
        ELSIF NEW.next_plan_version IS NOT NULL AND NEW.current_period_start >= NEW.next_plan_version_at THEN
          NEW.plan_version := NEW.next_plan_version;
          NEW.next_plan_version := NULL;
          NEW.next_plan_version_at := NULL;
        END IF;
        RETURN NEW;
      END $$`);
  }

  /** The trigger's function as 1764002410000-Grandfathering left it. */
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION provider_subscriptions_keep_plan_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' OR NEW.tier IS DISTINCT FROM OLD.tier THEN
          NEW.plan_version := (SELECT max(p.version) FROM plan_versions p WHERE p.tier = NEW.tier);
        END IF;
        RETURN NEW;
      END $$`);
    await queryRunner.query(`ALTER TABLE "plan_migration_items" DROP CONSTRAINT "plan_migration_items_migration_id_fkey"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "next_plan_version_at"`);
    await queryRunner.query(`ALTER TABLE "provider_subscriptions" DROP COLUMN "next_plan_version"`);
    await queryRunner.query(`DROP INDEX "public"."plan_migration_items_status_idx"`);
    await queryRunner.query(`DROP TABLE "plan_migration_items"`);
    await queryRunner.query(`DROP INDEX "public"."plan_migrations_one_running_per_tier"`);
    await queryRunner.query(`DROP TABLE "plan_migrations"`);
  }
}
