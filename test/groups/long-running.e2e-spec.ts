// The specs that wait on the wall clock or on child processes, or work at scale: the database cut across
// graphile's minutely cron, PostgreSQL ending the server's connections under traffic, reconciliation at scale
// through the real CLI, SIGKILL and restart, the migration lock's timeout, graceful shutdown, the console's
// pages over 100,000 organisations, the migration preview over 100,000 subscriptions, a plan migration of 1,000 across a restart, the CLI and `npm start` on the embedded database (a fresh initdb).
// `npm test` leaves them out (test/support/spec-groups.js); `npm run test:all` (CI) runs them, this group first
// (test/support/test-sequencer.js), so that its waits overlap the other groups' work.
import '../resilience-database.e2e-spec';
import '../database-terminated.e2e-spec';
import '../provider-sync-scale.e2e-spec';
import '../webhook-sigkill.e2e-spec';
import '../migration-lock.e2e-spec';
import '../ops-shutdown.e2e-spec';
import '../console-scale.e2e-spec';
import '../cli-embedded.e2e-spec';
import '../plan-preview-scale.e2e-spec';
import '../plan-migration-restart.e2e-spec';
