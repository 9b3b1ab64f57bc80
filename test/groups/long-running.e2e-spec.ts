// The specs that mostly wait on the wall clock or on child processes: the database cut across graphile's
// minutely cron, reconciliation at scale through the real CLI, SIGKILL and restart, the migration lock's
// timeout, graceful shutdown. Their own group, which test/support/test-sequencer.js starts first, so that
// they wait while the other groups use the cores (see jest.config.js).
import '../resilience-database.e2e-spec';
import '../provider-sync-scale.e2e-spec';
import '../webhook-sigkill.e2e-spec';
import '../migration-lock.e2e-spec';
import '../ops-shutdown.e2e-spec';
