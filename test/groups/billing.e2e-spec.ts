// Plans, checkout, portal, checkout sessions, history, the provider through its SDK, return pages, subscription
// changes (provider meters are in billing-meters.e2e-spec.ts).
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../billing-checkout.e2e-spec';
import '../billing-checkout-plans.e2e-spec';
import '../billing-portal.e2e-spec';
import '../billing-session.e2e-spec';
import '../provider-double-checkout.e2e-spec';
import '../provider-double-invoices.e2e-spec';
import '../billing-history.e2e-spec';
import '../billing-provider.e2e-spec';
import '../billing-provider-budget.e2e-spec';
import '../billing-one-checkout.e2e-spec';
import '../billing-return-pages.e2e-spec';
import '../billing-plans.e2e-spec';
import '../billing-subscription.e2e-spec';
import '../billing-subscription-concurrency.e2e-spec';
import '../billing-subscription-members.e2e-spec';
import '../billing-subscription-timeout.e2e-spec';
import '../billing-subscription-sandbox.e2e-spec';
import '../sandbox-credit-packs.e2e-spec';
import '../sandbox-auto-recharge.e2e-spec';
import '../billing-credit-checkout.e2e-spec';
import '../billing-currencies.e2e-spec';
