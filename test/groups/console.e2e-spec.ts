// The operator console (spec §14) outside the browser: sign-in, pages, actions, and its reads at scale.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../console-sign-in.e2e-spec';
import '../console-pages.e2e-spec';
import '../console-scale.e2e-spec';
