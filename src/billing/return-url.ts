import { AppException } from '../common/app-exception';

// Whitespace, control characters and backslashes are where URL parsers disagree with each other
// (browsers, the provider, us): refuse them rather than reason about every parser.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const AMBIGUOUS = /[\s\\\u0000-\u001f\u007f]/;

/**
 * A checkout/portal return URL must be absolute and on the web app's own origin (APP_URL), so our
 * checkout can never be used as an open redirect. Returns the URL as given (it may hold
 * `{CHECKOUT_SESSION_ID}`, which the provider fills in), or throws 400 invalid_return_url.
 */
export function requireReturnUrl(field: string, value: string, appUrl: URL): string {
  const invalid = () =>
    new AppException('invalid_return_url', `${field} must be an absolute URL under ${appUrl.origin}.`);
  if (value.length > 2048 || AMBIGUOUS.test(value)) throw invalid();
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw invalid();
  }
  // Both checks: the parsed origin (no userinfo tricks) and the literal prefix (no parser differentials).
  const sameOrigin = parsed.origin === appUrl.origin && !parsed.username && !parsed.password;
  const literal = value.startsWith(appUrl.origin) && /^([/?#]|$)/.test(value.slice(appUrl.origin.length));
  if (!sameOrigin || !literal) throw invalid();
  return value;
}
