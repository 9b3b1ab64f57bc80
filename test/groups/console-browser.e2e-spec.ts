// The operator console in a real browser (Chromium): its pages and actions, and sign-in through an OpenID
// provider. Apart from the other browser specs so that the two halves share the Jest workers (see
// jest.config.js).
import '../browser-console.e2e-spec';
import '../console-oidc.e2e-spec';
import '../browser-console-plans.e2e-spec';
