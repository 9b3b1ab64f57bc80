import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A reservation's commit is made once per reservation by the reservation itself (spec §16.5): settle_commits only
 * commits one still held, and keeps what it spent and what it answered. The usage write no longer stores an
 * idempotency key for it besides; a repeated commit is answered from the reservation, for which the usage write's
 * look-up of it now also reads `spent` (the same amount answers the same, another is 409).
 */
const RESERVATION = (spent: boolean) => `
  CREATE FUNCTION credits.reservation(reservation_id uuid)
  RETURNS TABLE (organisation_id uuid, metric text, amount bigint, expires_at timestamptz, status text,${spent ? ' spent bigint,' : ''} response jsonb)
  LANGUAGE sql STABLE AS $$
    SELECT r.organisation_id, r.metric, r.amount, r.expires_at, r.status,${spent ? ' r.spent,' : ''} r.response FROM usage_reservations r WHERE r.id = reservation_id
  $$`;

export class CommitKeyedByReservation1764002580000 implements MigrationInterface {
  name = 'CommitKeyedByReservation1764002580000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION credits.reservation(uuid)`);
    await queryRunner.query(RESERVATION(true));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION credits.reservation(uuid)`);
    await queryRunner.query(RESERVATION(false));
  }
}
