import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The web app's own ids (spec §3): organisations and users may carry an `external_id`, unique per kind, so
 * the web app never has to store this service's ids; provisioning creates are idempotent by it and a JWT's
 * `sub` names the user by it.
 */
export class ExternalIds1763800600000 implements MigrationInterface {
  name = 'ExternalIds1763800600000';

  async up(q: QueryRunner): Promise<void> {
    for (const table of ['organisations', 'users']) {
      await q.query(`
        ALTER TABLE ${table} ADD COLUMN external_id text
          CONSTRAINT ${table}_external_id_check CHECK (char_length(external_id) BETWEEN 1 AND 255),
          ADD CONSTRAINT ${table}_external_id_key UNIQUE (external_id)`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['organisations', 'users']) await q.query(`ALTER TABLE ${table} DROP COLUMN external_id`);
  }
}
