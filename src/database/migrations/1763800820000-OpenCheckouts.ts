import { MigrationInterface, QueryRunner } from 'typeorm';

/** At most one payable checkout session per organisation (billing/open-checkout.entity.ts). */
export class OpenCheckouts1763800820000 implements MigrationInterface {
  name = 'OpenCheckouts1763800820000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE open_checkouts (
        organisation_id uuid CONSTRAINT open_checkouts_pkey PRIMARY KEY
          CONSTRAINT open_checkouts_organisation_id_fkey REFERENCES organisations(id) ON DELETE CASCADE,
        session_id text,
        url text,
        tier text,
        price_id text,
        claim uuid,
        claimed_at timestamptz
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE open_checkouts`);
  }
}
