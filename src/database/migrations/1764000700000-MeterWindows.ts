import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Provider meters (spec §13): the usage accepted per organisation, metric and window, and the function that
 * picks the window a report goes to (see src/billing/meters/meters.repository.ts for why it takes a lock).
 */
export class MeterWindows1764000700000 implements MigrationInterface {
  name = 'MeterWindows1764000700000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "meter_windows" ("organisation_id" uuid NOT NULL, "metric" text NOT NULL, "window_start" bigint NOT NULL, "window_end" bigint NOT NULL, "customer_id" text NOT NULL, "value" bigint NOT NULL, "status" text NOT NULL DEFAULT 'open', "attempts" integer NOT NULL DEFAULT '0', "last_error" text, "next_attempt_at" TIMESTAMP WITH TIME ZONE, "leased_until" TIMESTAMP WITH TIME ZONE, "delivered_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "meter_windows_status_check" CHECK (status IN ('open', 'pending', 'delivered', 'failed')), CONSTRAINT "meter_windows_value_check" CHECK (value > 0), CONSTRAINT "meter_windows_pkey" PRIMARY KEY ("organisation_id", "metric", "window_start"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "meter_windows_undelivered_idx" ON "meter_windows" ("status", "window_end") WHERE status IN ('open', 'pending')`,
    );
    await queryRunner.query(
      `ALTER TABLE "meter_windows" ADD CONSTRAINT "meter_windows_organisation_id_fkey" FOREIGN KEY ("organisation_id") REFERENCES "organisations"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`
      CREATE FUNCTION meter_window_start(org uuid, metric_name text, flush_s integer) RETURNS bigint
      LANGUAGE plpgsql VOLATILE AS $$
      DECLARE
        now_s numeric;
        start_s bigint;
      BEGIN
        -- Held to the end of the transaction; closing windows takes it exclusively (see meters.repository.ts).
        PERFORM pg_advisory_xact_lock_shared(1836348530, hashtext(org::text || ':' || metric_name));
        now_s := extract(epoch FROM clock_timestamp());
        start_s := floor(now_s / flush_s)::bigint * flush_s;
        -- Only after METER_FLUSH_S grew: a window of the new length may start where a shorter one already closed.
        IF EXISTS (SELECT 1 FROM meter_windows w WHERE w.organisation_id = org AND w.metric = metric_name
                   AND w.window_start = start_s AND w.status <> 'open') THEN
          start_s := floor(now_s)::bigint;
        END IF;
        RETURN start_s;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION meter_window_start(uuid, text, integer)`);
    await queryRunner.query(`ALTER TABLE "meter_windows" DROP CONSTRAINT "meter_windows_organisation_id_fkey"`);
    await queryRunner.query(`DROP INDEX "public"."meter_windows_undelivered_idx"`);
    await queryRunner.query(`DROP TABLE "meter_windows"`);
  }
}
