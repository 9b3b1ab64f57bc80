// The provider's webhook: signatures, effects, order, the ledger, concurrency, the sandbox, the event CLI.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../webhook-signature.e2e-spec';
import '../webhook-events.e2e-spec';
import '../webhook-order.e2e-spec';
import '../webhook-ledger-writes.e2e-spec';
import '../webhook-provider-ties.e2e-spec';
import '../webhook-field-types.e2e-spec';
import '../webhook-seats-schedules.e2e-spec';
import '../webhook-concurrency.e2e-spec';
import '../provider-truth.e2e-spec';
import '../webhook-cli.e2e-spec';
import '../sandbox.e2e-spec';
import '../sandbox-cli.e2e-spec';
import '../sandbox-clock.e2e-spec';
