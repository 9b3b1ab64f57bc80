import createFetchClient from 'openapi-fetch';
import { Webhook } from 'standardwebhooks';
import type { Entitlement, Feature, Schemas } from './entitlements.js';
import type { components, paths } from './schema.js';

export type { components, paths };
export type { Entitlement, Feature, Metric, Schemas, VerifiedEntitlements, VerifyEntitlementsOptions } from './entitlements.js';
export { verifyEntitlements } from './entitlements.js';
export type { GatedRequest, GateErrorCode, GateMiddleware, GateResponse, RequireEntitlementsOptions } from './gates.js';
export { requireEntitlements, requireFeature } from './gates.js';

/** The shared error body of every error the service answers. */
export type ErrorBody = Schemas['ErrorResponse'];
/**
 * The client's own codes, for what is not an answer of the service: none arrived (`network_error`: the
 * service is unreachable, the connection broke), or one that is not its JSON (`bad_response`: a proxy's or a
 * gateway's own error page, a body cut short or of another shape).
 */
export type ClientErrorCode = 'network_error' | 'bad_response';
/** Every stable machine code a call can throw, the service's and the client's: switch on it, not on the message. */
export type ErrorCode = ErrorBody['code'] | ClientErrorCode;

/**
 * Every failure of a call: an answer of the service other than 2xx (its status, its `code`, its body), or
 * one of the client's own codes when the service's answer never came (`network_error`) or was not its JSON
 * (`bad_response`). Each with the request id where there is one, for support.
 */
export class ServiceError extends Error {
  /** The answer's HTTP status; 0 when none arrived (`network_error`), as fetch's own network-error response. */
  readonly status: number;
  readonly code: ErrorCode;
  /** The service's error body; null for the client's own codes, when there is none. */
  readonly body: ErrorBody | null;
  /** `X-Request-Id` of the answer, when it has one: the service logs the request's details under it. */
  readonly requestId: string | null;
  /** Seconds to wait before trying again, when the answer said so (`Retry-After`). */
  readonly retryAfterS: number | null;

  constructor(response: Response | null, body: ErrorBody | { code: ClientErrorCode; message: string }, options?: { cause?: unknown }) {
    super(`${response ? response.status : 'no answer'} ${body.code}: ${body.message}`, options);
    this.name = 'ServiceError';
    this.status = response?.status ?? 0;
    this.code = body.code;
    this.body = 'statusCode' in body ? body : null;
    this.requestId = response?.headers.get('x-request-id') ?? null;
    const retryAfter = Number(response?.headers.get('retry-after'));
    this.retryAfterS = response?.headers.has('retry-after') && Number.isFinite(retryAfter) ? retryAfter : null;
  }
}

/** Narrows an unknown error to the service's, optionally to some codes: `if (isServiceError(err, 'limit_exceeded'))`. */
export function isServiceError<C extends ErrorCode>(err: unknown, ...codes: C[]): err is ServiceError & { code: C } {
  return err instanceof ServiceError && (codes.length === 0 || (codes as ErrorCode[]).includes(err.code));
}

export interface ClientOptions {
  /** The service's origin, e.g. `https://billing.internal` (no trailing path). */
  baseUrl: string;
  /** A user's session token or the web app's own JWT: sent as `Authorization: Bearer …`. */
  session?: string | undefined;
  /** One of `SERVICE_API_KEYS`, for the web app's back end (provisioning, usage): sent as `X-Service-Key`. */
  serviceKey?: string | undefined;
  /** Another fetch (tests, proxies, retries of your own). */
  fetch?: typeof globalThis.fetch | undefined;
}

type Body<P extends keyof paths, M extends 'post' | 'put'> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/**
 * The web app's client: one typed function per route it (or its back end) calls. Each answers the route's
 * 2xx body, or throws a `ServiceError` carrying the error's `code`.
 */
export function createClient(options: ClientOptions) {
  const headers: Record<string, string> = {};
  if (options.session) headers.Authorization = `Bearer ${options.session}`;
  if (options.serviceKey) headers['X-Service-Key'] = options.serviceKey;
  const api = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    fetch: (request) => serviceAnswer(options.fetch ?? globalThis.fetch, request),
  });

  // openapi-fetch answers `{ data }` or `{ error }` with the response; this turns the second into a throw.
  async function call<T>(pending: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await pending;
    if (response.ok) return data as T;
    if (isErrorBody(error)) throw new ServiceError(response, error);
    throw new ServiceError(response, { code: 'bad_response', message: `the answer's JSON is not the service's error shape` });
  }

  return {
    /** `GET /api/health`: 200 while the database answers. */
    health: () => call(api.GET('/api/health')),
    /**
     * `GET /api/billing/plans` (public): every tier with features, limits, trial days and prices, and the credit packs
     * with their one-time prices, for a pricing page. `currency` (e.g. `'eur'`, any case): every price in it, from
     * the provider's currency options (400 `currency_unavailable` when a price has none).
     */
    plans: (query: paths['/api/billing/plans']['get']['parameters']['query'] = {}) => call(api.GET('/api/billing/plans', { params: { query } })),

    // The signed-in user (session or JWT).
    /** `GET /api/me`: the caller and a page of their organisations (`limit`, `starting_after`), with role and tier. */
    me: (query: paths['/api/me']['get']['parameters']['query'] = {}) => call(api.GET('/api/me', { params: { query } })),
    /** `GET /api/organisations/{id}/members` (any member). */
    members: (organisationId: string) => call(api.GET('/api/organisations/{id}/members', { params: { path: { id: organisationId } } })),
    /** `GET /api/licensing/status`: tier, flags and usage against limits. */
    status: (organisationId: string) => call(api.GET('/api/licensing/status', { params: { query: { organisation_id: organisationId } } })),
    /**
     * `GET /api/licensing/entitlements` (member, JWT or service key): every feature and limit in force, with
     * usage, each limit's origin (`tier`, `seats`, `override`) and the live overrides. Cache it by `version`.
     */
    entitlements: (organisationId: string) =>
      call(api.GET('/api/licensing/entitlements', { params: { query: { organisation_id: organisationId } } })),
    /**
     * `GET /api/licensing/entitlements/token` (member, JWT or service key): the entitlements without usage, signed,
     * valid `ttlS` seconds (default 3600, at most ENTITLEMENT_TOKEN_MAX_TTL_S). Check it with `verifyEntitlements`.
     */
    entitlementToken: (organisationId: string, ttlS?: number) =>
      call(api.GET('/api/licensing/entitlements/token', { params: { query: { organisation_id: organisationId, ...(ttlS === undefined ? {} : { ttl_s: ttlS }) } } })),
    /** `GET /.well-known/jwks.json` (public): the keys that verify entitlement tokens, to keep beside them offline. */
    jwks: () => call(api.GET('/.well-known/jwks.json')),
    /** `GET /api/licensing/check?feature=`: is the feature in force? (member or service key; 400 `unknown_entitlement`) */
    checkFeature: async (organisationId: string, feature: Feature): Promise<boolean> => {
      const answer = await call(api.GET('/api/licensing/check', { params: { query: { organisation_id: organisationId, feature } } }));
      return answer.allowed;
    },
    /** `GET /api/licensing/check`: would `amount` more of `metric` fit? (member or service key) */
    check: (query: paths['/api/licensing/check']['get']['parameters']['query']) =>
      call(api.GET('/api/licensing/check', { params: { query } })),
    /**
     * `GET /api/licensing/explain` (member or service key): why the organisation has its license — grace, the
     * subscription chosen and how its tier was resolved, its events, and why each other one was not chosen.
     */
    explain: (organisationId: string) => call(api.GET('/api/licensing/explain', { params: { query: { organisation_id: organisationId } } })),
    /**
     * `GET /api/licensing/credits` (member, JWT or service key): each credits metric of the tier in force with its
     * included amount, `balance`, `reserved`, `available` (included left + balance − reserved), the grants that
     * count, in the order reports draw on them, and its automatic top-up (`auto_recharge`, or null).
     */
    credits: (organisationId: string) => call(api.GET('/api/licensing/credits', { params: { query: { organisation_id: organisationId } } })),
    /**
     * `GET /api/licensing/credits/ledger` (member, JWT or service key): every movement of the organisation's grants,
     * newest first, `limit` (1–100, default 20) at a time; pass the last `id` as `starting_after` for the next page.
     */
    creditLedger: (query: paths['/api/licensing/credits/ledger']['get']['parameters']['query']) =>
      call(api.GET('/api/licensing/credits/ledger', { params: { query } })),
    /** `GET /api/billing/session`: what a completed checkout bought. */
    checkoutSession: (sessionId: string) => call(api.GET('/api/billing/session', { params: { query: { session_id: sessionId } } })),
    /** `POST /api/billing/checkout` (owner or admin): a provider checkout to redirect the buyer to. */
    checkout: (body: Body<'/api/billing/checkout', 'post'>) => call(api.POST('/api/billing/checkout', { body })),
    /**
     * `POST /api/billing/credits/checkout` (owner or admin): a provider checkout of `quantity` (1–100) credit packs to
     * redirect the buyer to, on any tier. The credits are granted once the provider says it is paid.
     */
    buyCredits: (body: Body<'/api/billing/credits/checkout', 'post'>) => call(api.POST('/api/billing/credits/checkout', { body })),
    /**
     * `PUT /api/billing/credits/auto-recharge` (owner or admin): buy `pack` automatically whenever a report leaves the
     * metric's `available` below `threshold`, at most `monthly_limit` a month; 409 `no_payment_method` until the
     * customer has a default payment method. A declined payment turns it off (`enabled` false, `last_error`).
     */
    saveAutoRecharge: (body: Body<'/api/billing/credits/auto-recharge', 'put'>) => call(api.PUT('/api/billing/credits/auto-recharge', { body })),
    /** `DELETE /api/billing/credits/auto-recharge` (owner or admin): no more automatic top-ups of the metric. */
    deleteAutoRecharge: (organisationId: string, metric: paths['/api/billing/credits/auto-recharge']['delete']['parameters']['query']['metric']) =>
      call(api.DELETE('/api/billing/credits/auto-recharge', { params: { query: { organisation_id: organisationId, metric } } })),
    /** `GET /api/billing/portal` (owner or admin): the provider's billing portal URL. */
    portal: (organisationId?: string) =>
      call(api.GET('/api/billing/portal', { params: { query: organisationId ? { organisation_id: organisationId } : {} } })),
    /** `GET /api/billing/subscription` (any member): the live subscription with seats and pending change, or null. */
    subscription: (organisationId: string) =>
      call(api.GET('/api/billing/subscription', { params: { query: { organisation_id: organisationId } } })),
    /** `POST /api/billing/subscription/preview` (any member): the provider's invoice for a change; changes nothing. */
    previewChange: (body: Body<'/api/billing/subscription/preview', 'post'>) => call(api.POST('/api/billing/subscription/preview', { body })),
    /**
     * `POST /api/billing/subscription/change` (owner or admin): an upgrade now (pass the preview's `proration_date`
     * to be charged what it showed; 402 `payment_failed` keeps the old plan), a downgrade at the period's end.
     */
    changeSubscription: (body: Body<'/api/billing/subscription/change', 'post'>) => call(api.POST('/api/billing/subscription/change', { body })),
    /** `POST /api/billing/subscription/cancel` (owner or admin): end with the current period. */
    cancel: (organisationId: string) => call(api.POST('/api/billing/subscription/cancel', { body: { organisation_id: organisationId } })),
    /** `POST /api/billing/subscription/resume` (owner or admin): undo a cancellation before the period ends. */
    resume: (organisationId: string) => call(api.POST('/api/billing/subscription/resume', { body: { organisation_id: organisationId } })),
    /** `DELETE /api/billing/subscription/pending-change` (owner or admin): drop the change scheduled for the period's end. */
    releasePendingChange: (organisationId: string) =>
      call(api.DELETE('/api/billing/subscription/pending-change', { params: { query: { organisation_id: organisationId } } })),
    /** `GET /api/billing/history`: paid invoices, newest first, a page at a time. */
    history: (query: paths['/api/billing/history']['get']['parameters']['query']) =>
      call(api.GET('/api/billing/history', { params: { query } })),

    // The web app's back end (X-Service-Key).
    /** `POST /api/licensing/usage`: add usage; refused past the limit (402 `limit_exceeded`). */
    reportUsage: (body: Body<'/api/licensing/usage', 'post'>) => call(api.POST('/api/licensing/usage', { body })),
    /**
     * `POST /api/licensing/usage/batch`: 1 to 1000 events; `results[i]` is what `reportUsage(events[i])` would
     * have answered (`status`, and `code` when refused), so check each. Throws only for a malformed batch (400).
     */
    reportUsageBatch: (events: Body<'/api/licensing/usage/batch', 'post'>['events']) =>
      call(api.POST('/api/licensing/usage/batch', { body: { events } })),
    /**
     * `POST /api/licensing/usage/reservations`: hold `amount` (the most the work may spend) for `ttl_s` seconds
     * (default 300), checked as a report of it would be (402 `limit_exceeded` / `insufficient_credits`, nothing held).
     */
    reserveUsage: (body: Body<'/api/licensing/usage/reservations', 'post'>) => call(api.POST('/api/licensing/usage/reservations', { body })),
    /**
     * `POST /api/licensing/usage/reservations/{id}/commit`: report what the work spent (0 to the reserved amount),
     * the rest released; a repeat counts once and answers the same; after the hold lapsed an ordinary report
     * answered `expired: true`. Pass `organisation_id` to never reach another organisation's reservation (404).
     */
    commitReservation: (reservationId: string, body: Body<'/api/licensing/usage/reservations/{id}/commit', 'post'>) =>
      call(api.POST('/api/licensing/usage/reservations/{id}/commit', { params: { path: { id: reservationId } }, body })),
    /** `DELETE /api/licensing/usage/reservations/{id}`: release the hold (again: fine; after a commit: 409 `reservation_committed`). */
    releaseReservation: (reservationId: string, organisationId?: string) =>
      call(
        api.DELETE('/api/licensing/usage/reservations/{id}', {
          params: { path: { id: reservationId }, query: organisationId === undefined ? {} : { organisation_id: organisationId } },
        }),
      ),
    admin: {
      /** `POST /api/admin/organisations`: idempotent by `external_id`. */
      createOrganisation: (body: Body<'/api/admin/organisations', 'post'>) => call(api.POST('/api/admin/organisations', { body })),
      organisation: (id: string) => call(api.GET('/api/admin/organisations/{id}', { params: { path: { id } } })),
      organisationByExternalId: (externalId: string) =>
        call(api.GET('/api/admin/organisations', { params: { query: { external_id: externalId } } })),
      /** `POST /api/admin/users`: idempotent by `external_id`. */
      createUser: (body: Body<'/api/admin/users', 'post'>) => call(api.POST('/api/admin/users', { body })),
      user: (id: string) => call(api.GET('/api/admin/users/{id}', { params: { path: { id } } })),
      userByExternalId: (externalId: string) => call(api.GET('/api/admin/users', { params: { query: { external_id: externalId } } })),
      /** `PUT …/members/{user_id}`: add a member or change a role (402 `limit_exceeded` past the `users` limit). */
      putMember: (organisationId: string, userId: string, body: Body<'/api/admin/organisations/{id}/members/{user_id}', 'put'>) =>
        call(api.PUT('/api/admin/organisations/{id}/members/{user_id}', { params: { path: { id: organisationId, user_id: userId } }, body })),
      /** `DELETE …/members/{user_id}` (never the last owner: 409 `last_owner`). */
      removeMember: (organisationId: string, userId: string) =>
        call(api.DELETE('/api/admin/organisations/{id}/members/{user_id}', { params: { path: { id: organisationId, user_id: userId } } })),
      /**
       * Overrides of a feature (boolean) or a metric's limit (integer ≥ 0) for one organisation (custom deals,
       * support grants): they replace the tier's value until `expires_at`, and every change is audited.
       */
      overrides: {
        /** `PUT …/overrides/{name}`: set one; the same again answers it unchanged. */
        set: (organisationId: string, name: Entitlement, body: Body<'/api/admin/organisations/{id}/overrides/{name}', 'put'>) =>
          call(api.PUT('/api/admin/organisations/{id}/overrides/{name}', { params: { path: { id: organisationId, name } }, body })),
        /** `GET …/overrides`: every override, expired ones too. */
        list: async (organisationId: string) =>
          (await call(api.GET('/api/admin/organisations/{id}/overrides', { params: { path: { id: organisationId } } }))).data,
        /** `DELETE …/overrides/{name}` (none: 404 `override_not_found`). */
        delete: (organisationId: string, name: Entitlement) =>
          call(api.DELETE('/api/admin/organisations/{id}/overrides/{name}', { params: { path: { id: organisationId, name } } })),
      },
      /** Credit grants an operator gives (a deal, an apology) and voids; each change is audited. */
      credits: {
        /**
         * `POST …/credits/grants`: a grant of `amount` units of a per-period metric; the same `idempotency_key` again
         * answers the same grant, with another body 409 `idempotency_conflict`.
         */
        grant: (organisationId: string, body: Body<'/api/admin/organisations/{id}/credits/grants', 'post'>) =>
          call(api.POST('/api/admin/organisations/{id}/credits/grants', { params: { path: { id: organisationId } }, body })),
        /** `POST …/credits/grants/{grant_id}/void`: what is left written off, `remaining` 0 (again: the same answer). */
        void: (organisationId: string, grantId: string) =>
          call(api.POST('/api/admin/organisations/{id}/credits/grants/{grant_id}/void', { params: { path: { id: organisationId, grant_id: grantId } } })),
      },
      /** `POST /api/admin/sessions`: a session token for a user of the web app. */
      createSession: (body: Body<'/api/admin/sessions', 'post'>) => call(api.POST('/api/admin/sessions', { body })),
      /** `POST /api/admin/sessions/revoke`: one session (`{token}`) or all of a user's (`{user_id}`). */
      revokeSessions: (body: Body<'/api/admin/sessions/revoke', 'post'>) => call(api.POST('/api/admin/sessions/revoke', { body })),
      /** The plan versions (spec §17): what each tier's subscribers are on, and what moving them would change. */
      plans: {
        /** `GET /api/admin/plans`: every tier's versions with their definitions and live subscriptions. */
        list: async () => (await call(api.GET('/api/admin/plans'))).data,
        /**
         * `POST /api/admin/plans/{tier}/migrations/preview`: who would gain and lose which feature, whose limit drops
         * (and below their use), whose price changes, moving the tier's subscriptions on `from_version` (default: every
         * older one) to `to_version` (default: the newest); changes nothing. A page of organisations at a time.
         */
        previewMigration: (
          tier: string,
          body: Body<'/api/admin/plans/{tier}/migrations/preview', 'post'> = {},
          query: paths['/api/admin/plans/{tier}/migrations/preview']['post']['parameters']['query'] = {},
        ) => call(api.POST('/api/admin/plans/{tier}/migrations/preview', { params: { path: { tier }, query }, body })),
        /**
         * `POST /api/admin/plans/{tier}/migrations` (202): starts moving the tier's subscriptions to `to_version`, `at`
         * `now` or at each one's period end; answers the migration (`status: running`). 409 `migration_running` while
         * one runs for the tier.
         */
        startMigration: (tier: string, body: Body<'/api/admin/plans/{tier}/migrations', 'post'>) =>
          call(api.POST('/api/admin/plans/{tier}/migrations', { params: { path: { tier } }, body })),
        /** `GET /api/admin/plans/migrations/{id}`: the migration's status, done and failed counts, and first errors. */
        migration: (id: string) => call(api.GET('/api/admin/plans/migrations/{id}', { params: { path: { id } } })),
      },
      /** `GET /api/admin/audit`: the audit log, newest first, a page at a time (`starting_after`: the last entry's id). */
      audit: (query: paths['/api/admin/audit']['get']['parameters']['query'] = {}) => call(api.GET('/api/admin/audit', { params: { query } })),
    },
  };
}

export type Client = ReturnType<typeof createClient>;

/** Statuses whose answer has no body. */
const NO_BODY = [204, 205, 304];

/**
 * The answer to a request, read whole, or a ServiceError for what is not the service's: no answer or a
 * connection that broke while it arrived (`network_error`), a body that is not JSON (`bad_response`).
 * Reading the body here is what lets both keep the answer's status and request id.
 */
async function serviceAnswer(fetch: typeof globalThis.fetch, request: Request): Promise<Response> {
  const where = `${request.method} ${new URL(request.url).pathname}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(request);
  } catch (err) {
    throw new ServiceError(null, { code: 'network_error', message: `${where}: the service could not be reached (${reason(err)})` }, { cause: err });
  }
  if (NO_BODY.includes(response.status)) return response;
  try {
    text = await response.text();
  } catch (err) {
    throw new ServiceError(response, { code: 'network_error', message: `${where}: the connection broke during the answer (${reason(err)})` }, { cause: err });
  }
  const problem = notJson(response.headers.get('content-type'), text);
  if (problem) throw new ServiceError(response, { code: 'bad_response', message: `${where}: ${problem}, not the service's JSON` });
  return new Response(text, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Why a body is not JSON (a proxy's HTML page, nothing, a body cut short), or null when it is. */
function notJson(type: string | null, text: string): string | null {
  if (!text) return 'the answer is empty';
  if (!type || !/^application\/([\w.-]+\+)?json\b/i.test(type)) return `the answer is ${type ?? 'of no content type'}`;
  try {
    JSON.parse(text);
    return null;
  } catch {
    return 'the answer is malformed JSON';
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  return typeof body === 'object' && body !== null && typeof (body as ErrorBody).code === 'string' && typeof (body as ErrorBody).message === 'string';
}

/** What fetch says went wrong: Node's `fetch failed` carries the system's code (ECONNREFUSED…) as its cause. */
function reason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** What the service POSTs to each of `NOTIFY_URLS` (the document's `webhooks`). */
export type Notification =
  | Schemas['LicenseUpdatedNotification']
  | Schemas['UsageCapacityNotification']
  | Schemas['TrialEndingNotification']
  | Schemas['UsageThresholdNotification']
  | Schemas['CreditsLowNotification']
  | Schemas['CreditsGrantedNotification']
  | Schemas['CreditsRechargeFailedNotification'];

/**
 * Verifies a notification as received (the raw body, exactly as it arrived, and its headers) against
 * `NOTIFY_SECRET` (`whsec_…`), Standard Webhooks style, and answers the typed message. Throws when the
 * signature does not match or the timestamp is more than five minutes away.
 */
export function verifyNotification(
  rawBody: string | Uint8Array,
  headers: Record<string, string | string[] | undefined> | Headers,
  secret: string,
): Notification {
  const plain: Record<string, string> = {};
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  for (const [name, value] of entries) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) plain[name.toLowerCase()] = first;
  }
  return new Webhook(secret).verify(typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody), plain) as Notification;
}
