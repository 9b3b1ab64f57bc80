/**
 * The example's sign-in, for the sandbox only. `npm run example` plays the web app's back end: it mints a
 * session for a demo user with the service key (which stays in that Node process, never in the browser) and
 * prints a link carrying the session in its #fragment (never sent to a server). This page keeps it for the tab.
 *
 * In your app, your own sign-in gives the browser its token: a session your back end minted after your login
 * (POST /api/admin/sessions), or your own JWT when the service trusts your JWKS (AUTH_JWT_JWKS_URL).
 */
export interface ExampleSession {
  token: string;
  organisationId: string;
}

const KEY = 'billing-example-session';

export function readSession(): ExampleSession | null {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const token = fragment.get('session');
  const organisationId = fragment.get('org');
  if (token && organisationId) {
    sessionStorage.setItem(KEY, JSON.stringify({ token, organisationId }));
    // The token leaves the address bar (and the history) at once.
    window.history.replaceState(null, '', window.location.pathname + window.location.search);
  }
  const stored = sessionStorage.getItem(KEY);
  return stored ? (JSON.parse(stored) as ExampleSession) : null;
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
}
