import { MigrationInterface, QueryRunner } from 'typeorm';

/** A sandbox checkout session can be expired before it is paid, like the provider's (POST …/expire). */
export class SandboxCheckoutExpiry1763800810000 implements MigrationInterface {
  name = 'SandboxCheckoutExpiry1763800810000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sandbox_checkout_sessions DROP CONSTRAINT sandbox_checkout_sessions_status_check`);
    await q.query(`
      ALTER TABLE sandbox_checkout_sessions ADD CONSTRAINT sandbox_checkout_sessions_status_check
        CHECK (status IN ('open', 'complete', 'expired'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    // An expired session becomes an open one whose time is up: the sandbox treats both alike.
    await q.query(`UPDATE sandbox_checkout_sessions SET status = 'open', expires_at = LEAST(expires_at, created) WHERE status = 'expired'`);
    await q.query(`ALTER TABLE sandbox_checkout_sessions DROP CONSTRAINT sandbox_checkout_sessions_status_check`);
    await q.query(`ALTER TABLE sandbox_checkout_sessions ADD CONSTRAINT sandbox_checkout_sessions_status_check CHECK (status IN ('open', 'complete'))`);
  }
}
