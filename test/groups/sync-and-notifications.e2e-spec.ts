// Reconciliation with the provider and the outbound notifications.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../provider-sync.e2e-spec';
import '../provider-sync-schedules.e2e-spec';
import '../provider-double-lists.e2e-spec';
import '../provider-double-changes.e2e-spec';
import '../notifications.e2e-spec';
