// In a real browser (Chromium): the sandbox purchase, the return pages on a phone, the API docs.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../browser-sandbox.e2e-spec';
import '../browser-return-pages.e2e-spec';
import '../ops-browser.e2e-spec';
import '../browser-console.e2e-spec';
import '../console-oidc.e2e-spec';
