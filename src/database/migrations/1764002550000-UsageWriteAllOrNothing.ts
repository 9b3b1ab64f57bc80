import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage write applies all of its events or none (licensing.usage_uncontended): when a concurrent writer took a
 * key, settled a reservation or created a counter after the statement looked, the statement fails with
 * serialization_failure (40001), which rolls back everything it wrote, and the service runs it again. It then needs
 * no transaction of its own: one round trip instead of four (START TRANSACTION, SET LOCAL, the statement, COMMIT).
 */
export class UsageWriteAllOrNothing1764002550000 implements MigrationInterface {
  name = 'UsageWriteAllOrNothing1764002550000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION licensing.usage_uncontended(contended boolean) RETURNS boolean
      LANGUAGE plpgsql VOLATILE AS $$
      BEGIN
        IF contended THEN
          RAISE EXCEPTION 'usage write: a concurrent writer took a key, settled a reservation or created a counter first; run it again'
            USING ERRCODE = 'serialization_failure';
        END IF;
        RETURN true;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION licensing.usage_uncontended(boolean)`);
  }
}
