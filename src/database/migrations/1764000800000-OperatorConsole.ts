import { MigrationInterface, QueryRunner } from 'typeorm';

/** The operator console's sign-in (spec §14): one-time links and console sessions, both kept as token hashes. */
export class OperatorConsole1764000800000 implements MigrationInterface {
  name = 'OperatorConsole1764000800000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "console_sessions" ("token_hash" bytea NOT NULL, "email" text NOT NULL, "via" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "console_sessions_pkey" PRIMARY KEY ("token_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "console_sessions_expires_idx" ON "console_sessions" ("expires_at")`);
    await queryRunner.query(
      `CREATE TABLE "console_sign_in_links" ("token_hash" bytea NOT NULL, "email" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "used_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "console_sign_in_links_pkey" PRIMARY KEY ("token_hash"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "console_sign_in_links"`);
    await queryRunner.query(`DROP INDEX "public"."console_sessions_expires_idx"`);
    await queryRunner.query(`DROP TABLE "console_sessions"`);
  }
}
