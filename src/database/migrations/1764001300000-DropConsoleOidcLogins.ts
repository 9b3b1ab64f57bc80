import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A console sign-in through the OpenID provider no longer writes a row when it starts: the browser's handle
 * carries its own MAC and issue time, and the provider's one-time code makes the callback single use.
 * Sign-ins under way at the upgrade are refused at their callback (their cookie has no MAC): start again.
 */
export class DropConsoleOidcLogins1764001300000 implements MigrationInterface {
  name = 'DropConsoleOidcLogins1764001300000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."console_oidc_logins_expires_idx"`);
    await queryRunner.query(`DROP TABLE "console_oidc_logins"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "console_oidc_logins" ("request_hash" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "console_oidc_logins_pkey" PRIMARY KEY ("request_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "console_oidc_logins_expires_idx" ON "console_oidc_logins" ("expires_at")`);
  }
}
