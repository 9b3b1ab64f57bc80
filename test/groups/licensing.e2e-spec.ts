// License status, checks, usage limits, member limits, hot statement plans, data growth.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../licensing-status.e2e-spec';
import '../licensing-check.e2e-spec';
import '../entitlements.e2e-spec';
import '../licensing-explain.e2e-spec';
import '../overrides.e2e-spec';
import '../licensing-cli.e2e-spec';
import '../usage.e2e-spec';
import '../usage-batch.e2e-spec';
import '../usage-further-metrics.e2e-spec';
import '../usage-overage.e2e-spec';
import '../usage-hot.e2e-spec';
import '../hot-statement-plans.e2e-spec';
import '../database-functions.e2e-spec';
import '../data-growth.e2e-spec';
import '../entitlement-token.e2e-spec';
