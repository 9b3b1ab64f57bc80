// In a real browser (Chromium): the sandbox purchase, the return pages on a phone, the API docs, the drop-in
// React components in the example web app (the console's pages are in console-browser.e2e-spec.ts).
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../browser-sandbox.e2e-spec';
import '../browser-return-pages.e2e-spec';
import '../ops-browser.e2e-spec';
import '../browser-react.e2e-spec';
