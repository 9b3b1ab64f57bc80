// Identity, sessions, JWTs, the provisioning API, who may call each route, the API document.
// Grouped so that the app's modules load once for all of them (see jest.config.js).
import '../foundation.e2e-spec';
import '../provisioning.e2e-spec';
import '../audit.e2e-spec';
import '../identity-me.e2e-spec';
import '../auth-jwt.e2e-spec';
import '../route-auth.e2e-spec';
import '../ops-docs.e2e-spec';
