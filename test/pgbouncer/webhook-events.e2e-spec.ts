// test/webhook-events.e2e-spec.ts again, with every app behind PgBouncer in transaction mode (test/support/pgbouncer.ts).
import { throughPgBouncer } from '../support/pgbouncer';
import '../webhook-events.e2e-spec';

throughPgBouncer();
