/**
 * Every machine code the API answers in an error body's `code`, with its HTTP status and what it means.
 * Thrown as `new AppException('invalid_tier', message)`; the status comes from here; the OpenAPI document
 * lists this table (ops/openapi.ts). A new error is one new line here.
 */
export const ERROR_CODES = {
  // 400: the request is malformed or names something it may not.
  bad_request: [400, 'The request is malformed.'],
  error: [400, 'Another client error raised by the HTTP layer; the status says which.'],
  invalid_json: [400, 'The body is not valid JSON.'],
  json_too_deep: [400, 'The JSON body is nested deeper than 64 levels (not checked on the webhook route).'],
  nul_character: [400, 'A query value, path segment or JSON string holds a NUL character (%00, \\u0000).'],
  validation_failed: [400, 'A parameter or body field is missing, unknown (also __proto__, constructor, prototype), of the wrong type (an integer in a query is plain decimal digits), or out of range (one line per failed rule).'],
  session_id_required: [400, 'GET /api/billing/session without session_id.'],
  invalid_session_id: [400, 'session_id does not look like a checkout session id (cs_…).'],
  payment_not_completed: [400, 'The checkout session exists but its payment is not completed.'],
  organisation_id_required: [400, 'The caller belongs to several organisations (or none): name one with organisation_id.'],
  invalid_tier: [400, 'The tier is unknown or not a paid tier.'],
  tier_not_for_sale: [400, 'The tier has no provider price configured (PAYPROVIDER_PRICE_<TIER>).'],
  invalid_return_url: [400, 'A return URL is not an absolute URL under APP_URL.'],
  invalid_cursor: [400, 'starting_after names no entry of the list: not an invoice id of this history, or (GET /api/me) not an organisation of the caller\'s.'],
  unknown_entitlement: [400, 'The name is not a feature (the check) or not a feature or metric (overrides) of the tier table.'],
  invalid_override_value: [400, "An override's value is not of its name's kind: a boolean for a feature, an integer >= 0 for a metric."],
  negative_amount: [400, 'ai_tokens usage can only grow.'],
  no_change: [400, 'The change names the plan the subscription already has (the same tier, interval and seats).'],
  price_not_found: [400, 'The tier has no price with that interval (PAYPROVIDER_PRICE_<TIER>, as the provider confirmed it).'],
  invalid_proration_date: [400, "The change's proration_date is not within the subscription's current period (a preview's from an earlier period): preview again (the message is the provider's)."],
  tax_location_invalid: [400, "The payment provider cannot tell the customer's tax location (automatic tax): the customer's address needs fixing (the message is the provider's)."],
  invalid_event: [400, 'A webhook body that is not a provider event.'],
  invoice_invalid: [400, 'A signed invoice event whose invoice cannot be recorded (stored as failed).'],
  tier_unresolvable: [400, 'A signed subscription event whose tier cannot be resolved (stored as failed).'],
  signature_missing: [400, 'Neither a Payprovider-Signature nor a Stripe-Signature header.'],
  signature_malformed: [400, 'The signature header (Payprovider-Signature, else Stripe-Signature) is malformed.'],
  signature_timestamp_out_of_tolerance: [400, 'The signature timestamp is too far from now (PAYPROVIDER_WEBHOOK_TOLERANCE_S).'],
  signature_invalid: [400, 'No v1 signature matches the body with any configured secret.'],
  // 401: who is calling is not established.
  unauthenticated: [401, 'No live session (missing, unknown, expired or revoked) and no valid JWT (AUTH_JWT_*: bad signature or claims, unknown sub).'],
  service_key_required: [401, 'The X-Service-Key header is missing.'],
  invalid_service_key: [401, 'The X-Service-Key header is not one of SERVICE_API_KEYS.'],
  metrics_token_required: [401, 'METRICS_TOKEN is set and the request does not carry it.'],
  // 402: a limit of the tier in force.
  limit_exceeded: [402, 'The change would exceed a limit in force; nothing was recorded.'],
  payment_failed: [402, "The payment the change needed failed (e.g. a card declined; the message is the provider's): the plan in force stays as it was."],
  // 403: the caller is known but may not do this.
  forbidden: [403, 'The caller may not do this.'],
  organisation_forbidden: [403, 'The caller is not a member of the organisation (the same answer whether it exists or not).'],
  role_forbidden: [403, 'The action needs the role owner or admin in the organisation.'],
  service_keys_not_configured: [403, 'SERVICE_API_KEYS is not set: service-key routes are disabled.'],
  session_not_accepted: [403, 'A route for back-ends (X-Service-Key) was called with a user\'s session or token instead.'],
  // 404: nothing of that name.
  not_found: [404, 'No such route.'],
  organisation_not_found: [404, 'No organisation with that id (or external_id).'],
  user_not_found: [404, 'No user with that id (or external_id).'],
  membership_not_found: [404, 'The user is not a member of the organisation.'],
  session_not_found: [404, 'The payment provider knows no checkout session with that id.'],
  no_customer: [404, 'The organisation has no customer record with the payment provider.'],
  event_not_found: [404, 'No webhook event with that id in the ledger.'],
  no_subscription: [404, 'The organisation has no live subscription (active, trialing, past_due, unpaid, incomplete).'],
  no_pending_change: [404, "The organisation's subscription has no change scheduled for the end of its period."],
  override_not_found: [404, 'The organisation has no override of that name.'],
  audit_entry_not_found: [404, "No audit entry with that id (the console's audit entry page)."],
  notification_not_found: [404, 'No outbound notification with that webhook-id (notifications:retry).'],
  request_timeout: [408, 'The request (headers and body) did not arrive within REQUEST_TIMEOUT_S; the connection is closed.'],
  // 409: conflicts with what is stored.
  email_taken: [409, 'A user with that email already exists (under another external_id, or none).'],
  last_owner: [409, 'The change would leave the organisation without an owner.'],
  idempotency_key_reused: [409, 'The idempotency key was already used for a different report.'],
  checkout_in_progress: [409, 'Another checkout of this organisation is being opened at this moment; retry after Retry-After seconds.'],
  subscription_exists: [409, 'The organisation already has a live subscription: change the plan in the billing portal.'],
  seats_below_members: [409, 'Fewer seats (or a tier allowing fewer users) than the organisation has members: remove members first.'],
  pending_change_limit: [409, "A change pending at the payment provider (fewer seats, or a tier allowing fewer users, from the period's end) leaves no room for another member: release it or change to more seats first."],
  change_in_progress: [409, "Another change of the organisation's subscription is being made at this moment, or the last one's outcome at the payment provider is not known yet; retry after Retry-After seconds."],
  payload_too_large: [413, 'The body is larger than 1 MiB.'],
  unsupported_media_type: [415, 'A body on an /api route that is not JSON (Content-Type: application/json), e.g. a form post; or a JSON charset other than UTF-8.'],
  headers_too_large: [431, 'The request headers are larger than 16 KiB; the connection is closed.'],
  too_many_requests: [429, 'Too many requests.'],
  rate_limited: [429, 'This user made too many requests that reach the payment provider (PAYPROVIDER_USER_MAX_PER_MINUTE); retry after Retry-After seconds.'],
  // 5xx: ours or a dependency's; details only in the log, under the request id.
  internal_error: [500, 'Something went wrong on our side.'],
  payment_provider_error: [500, 'The payment provider failed or could not be reached.'],
  provider_error: [502, 'The payment provider refused or failed the subscription change for a reason the customer cannot act on; nothing was changed.'],
  provider_timeout: [504, 'The payment provider did not answer the subscription change in time: it may have been applied, and will show within minutes (the subscription read and the audit log say when). Do not repeat it meanwhile.'],
  payment_provider_busy: [503, "The payment provider's request budget is spent for now (its rate limit, or PAYPROVIDER_MAX_RPS); nothing was done. Retry after Retry-After seconds."],
  service_unavailable: [503, 'The service is temporarily unavailable.'],
  database_unavailable: [503, 'The database could not be reached or did not answer (connection refused or lost, no connection within 3 s, no answer within DATABASE_QUERY_TIMEOUT_MS). Retry.'],
  jwks_unavailable: [503, "A JWT names a signing key (kid) this service has not cached, and AUTH_JWT_JWKS_URL could not be fetched or is not a key set. Retry; tokens with a cached key keep working."],
  database_timeout: [503, 'The database did not answer within DATABASE_STATEMENT_TIMEOUT_MS; the work was rolled back. Retry.'],
  signing_key_missing: [503, 'No key signs entitlement tokens: ENTITLEMENT_SIGNING_KEYS is not set in production.'],
  event_not_stored: [503, 'The webhook event could not be stored; the provider retries it.'],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const statusOf = (code: ErrorCode): number => ERROR_CODES[code][0];
