import { MigrationInterface, QueryRunner } from 'typeorm';

/** One subscription change under way per organisation (billing/subscription-change-claim.entity.ts). */
export class SubscriptionChangeClaims1764000200000 implements MigrationInterface {
  name = 'SubscriptionChangeClaims1764000200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE subscription_change_claims (
        organisation_id uuid CONSTRAINT subscription_change_claims_pkey PRIMARY KEY
          CONSTRAINT subscription_change_claims_organisation_id_fkey REFERENCES organisations(id) ON DELETE CASCADE,
        claim uuid NOT NULL,
        claimed_at timestamptz NOT NULL
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE subscription_change_claims`);
  }
}
