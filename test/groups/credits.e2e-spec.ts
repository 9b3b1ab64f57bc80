// Credits (spec §16): grants and their ledger, consumption, reservations, rollover and expiry, alerts, the routes.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../credits-grants.e2e-spec';
import '../credits-usage.e2e-spec';
import '../credits-routes.e2e-spec';
import '../credits-top-ups.e2e-spec';
import '../credits-auto-recharge.e2e-spec';
import '../credits-reservations.e2e-spec';
import '../credits-concurrency.e2e-spec';
import '../credits-expiry.e2e-spec';
import '../credits-cli.e2e-spec';
import '../credits-rollover.e2e-spec';
import '../credits-alerts.e2e-spec';
import '../sandbox-credits-clock.e2e-spec';
