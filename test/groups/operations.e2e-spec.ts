// Faults and operations: outages, timeouts, the statement time limit, HTTP limits, metrics (the
// long waits are in long-running.e2e-spec.ts).
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../database-outage.e2e-spec';
import '../database-timeouts.e2e-spec';
import '../statement-timeout.e2e-spec';
import '../transaction-connections.e2e-spec';
import '../webhook-outage.e2e-spec';
import '../http-limits.e2e-spec';
import '../input-strictness.e2e-spec';
import '../ops-http.e2e-spec';
import '../logs-terminal.e2e-spec';
import '../laptop-env.e2e-spec';
