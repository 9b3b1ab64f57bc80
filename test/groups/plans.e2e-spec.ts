// Plan versions, grandfathering, the migration preview and migrations (spec §17).
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../plan-versions.e2e-spec';
import '../grandfathering.e2e-spec';
import '../plan-admin.e2e-spec';
import '../plan-migrations.e2e-spec';
import '../plan-migrations-sandbox.e2e-spec';
