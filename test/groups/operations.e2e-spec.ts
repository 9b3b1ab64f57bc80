// Faults and operations: outages, timeouts, the statement time limit, migrations, shutdown, HTTP limits, metrics, SIGKILL.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../database-outage.e2e-spec';
import '../resilience-database.e2e-spec';
import '../database-timeouts.e2e-spec';
import '../statement-timeout.e2e-spec';
import '../webhook-outage.e2e-spec';
import '../webhook-sigkill.e2e-spec';
import '../migration-lock.e2e-spec';
import '../ops-shutdown.e2e-spec';
import '../http-limits.e2e-spec';
import '../input-strictness.e2e-spec';
import '../ops-http.e2e-spec';
