// Behind PgBouncer in transaction mode (test/support/pgbouncer.ts): what the pooler itself must show
// (pooler.e2e-spec, with a notification written through it and delivered by the worker on the direct URL),
// then the core specs again with every app behind it: status reads, usage writes, webhooks (effects and
// concurrency) and the statement timeout. One PgBouncer for all of them. An extended group: `npm test`
// leaves it out, `npm run test:all` (CI) runs it (test/support/spec-groups.js).
import { throughPgBouncer } from '../support/pgbouncer';
import '../pgbouncer/pooler.e2e-spec';
import '../licensing-status.e2e-spec';
import '../usage.e2e-spec';
import '../webhook-events.e2e-spec';
import '../webhook-concurrency.e2e-spec';
import '../database-timeouts.e2e-spec';
import '../statement-timeout.e2e-spec';

throughPgBouncer();
