import { MigrationInterface, QueryRunner } from 'typeorm';

/** The console's sign-ins through an OpenID provider that are under way (spec §14), kept as hashes, 10 minutes. */
export class ConsoleOidcLogins1764001100000 implements MigrationInterface {
  name = 'ConsoleOidcLogins1764001100000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "console_oidc_logins" ("request_hash" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "console_oidc_logins_pkey" PRIMARY KEY ("request_hash"))`,
    );
    await queryRunner.query(`CREATE INDEX "console_oidc_logins_expires_idx" ON "console_oidc_logins" ("expires_at")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."console_oidc_logins_expires_idx"`);
    await queryRunner.query(`DROP TABLE "console_oidc_logins"`);
  }
}
