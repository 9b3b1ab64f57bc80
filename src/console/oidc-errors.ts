/** The OpenID provider cannot be reached (discovery or the token request failed): 503, try again. */
export class OidcUnavailable extends Error {}

/** Why a callback signs nobody in: shown to the operator as is, with its status (400, or 403 for an account refused). */
export class OidcRefused extends Error {
  constructor(
    message: string,
    readonly status: 400 | 403 = 400,
  ) {
    super(message);
  }
}
