// test/database-timeouts.e2e-spec.ts again, with every app behind PgBouncer in transaction mode.
import { throughPgBouncer } from '../support/pgbouncer';
import '../database-timeouts.e2e-spec';

throughPgBouncer();
