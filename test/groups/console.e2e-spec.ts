// The operator console (spec §14) outside the browser: sign-in, pages, actions (its reads at scale are in
// long-running.e2e-spec.ts).
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../console-sign-in.e2e-spec';
import '../console-pages.e2e-spec';
import '../console-license.e2e-spec';
import '../console-credits.e2e-spec';
import '../console-plans.e2e-spec';
