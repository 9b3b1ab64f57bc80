// The core e2e specs again, with every app behind PgBouncer in transaction mode (test/support/pgbouncer.ts):
// status reads, usage writes, webhooks (effects and concurrency), the statement timeout and the outbound
// notifications (their queue's worker keeps its own session on DATABASE_DIRECT_URL). One file for all
// of them, so they share one PgBouncer and one load of the application's modules.
import { throughPgBouncer } from '../support/pgbouncer';
import '../licensing-status.e2e-spec';
import '../usage.e2e-spec';
import '../webhook-events.e2e-spec';
import '../webhook-concurrency.e2e-spec';
import '../database-timeouts.e2e-spec';
import '../notifications.e2e-spec';

throughPgBouncer();
