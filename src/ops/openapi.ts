import { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ErrorResponse, SECURITY } from '../common/api-docs';
import { JWKS_ROUTE } from '../licensing/well-known.controller';
import { NOTIFICATION_WEBHOOKS } from '../notifications/notification.dto';
import { WEBHOOK_ROUTE } from '../webhook/webhook.controller';
import { TierTable, tableFeatures, tableMetrics } from '../config/tiers';
import { exactDocument } from './openapi-exact';

export const DOCS_PATH = '/api/docs';
export const DOCS_JSON_PATH = '/api/docs-json';

/** Builds the OpenAPI document from the controllers' decorators. Called once, at start. */
export function buildOpenApiDocument(app: INestApplication, tiers: TierTable): OpenAPIObject {
  const project = packageJson();
  const config = new DocumentBuilder()
    .setTitle('Subscription billing and licensing service')
    .setDescription(
      'Ties an organisation\'s paid subscription to a license tier and usage limits. Session routes take ' +
        '`Authorization: Bearer <token>` or the cookie `session=<token>` (and `Authorization: Bearer <JWT>`, the web ' +
        "app's own access token, when AUTH_JWT_JWKS_URL is configured). Every error has the body " +
        '`{statusCode, error, message, code}` and every response carries `X-Request-Id`.',
    )
    .setVersion(project.version)
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description:
          'Session token (opaque). When AUTH_JWT_JWKS_URL is configured, also an access token (JWT, RS256 or ES256) ' +
          "signed by a key of that JWKS, whose `sub` is the user's `external_id`.",
      },
      SECURITY.session,
    )
    .addCookieAuth(
      'session',
      { type: 'apiKey', in: 'cookie', name: 'session', description: 'The same session token, as a cookie' },
      SECURITY.sessionCookie,
    )
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'X-Service-Key', description: 'Key of a trusted back-end (SERVICE_API_KEYS)' },
      SECURITY.serviceKey,
    )
    // No scheme for the webhook's Payprovider-Signature: nobody types a signature into "Authorize"; the route
    // documents the header itself.
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when configured' }, SECURITY.metricsToken)
    .build();
  config.info.license = licenseOf(project.license);
  const document = SwaggerModule.createDocument(app, config, {
    extraModels: [ErrorResponse, ...NOTIFICATION_WEBHOOKS.map((webhook) => webhook.model)],
  });
  (document as { webhooks?: object }).webhooks = notificationWebhooks();
  // A revoke names one session or one user, never both nor neither (the controller refuses those with 400).
  const revoke = document.components?.schemas?.RevokeSessionsDto as { oneOf?: object[]; properties: Record<string, object> } | undefined;
  if (revoke) revoke.oneOf = ['token', 'user_id'].map((name) => ({ required: [name], properties: { [name]: revoke.properties[name] } }));
  // The check's feature form answers `allowed` alone, its metric form `used`, `limit` and `remaining` too: closed,
  // the feature form's answer excludes the metric form's, as the route's oneOf of the two says.
  const featureCheck = document.components?.schemas?.FeatureCheckResponse as { additionalProperties?: boolean } | undefined;
  if (featureCheck) featureCheck.additionalProperties = false;
  // /metrics is open while METRICS_TOKEN is unset: its token is optional in the document too.
  for (const operation of Object.values(document.paths['/metrics'] ?? {})) operation.security?.push({});
  return exactDocument(document, { databaseRoutes: (path) => path !== '/metrics' && path !== JWKS_ROUTE,
    tiers: Object.keys(tiers),
    metrics: tableMetrics(tiers),
    features: tableFeatures(tiers),
    rawBodyRoutes: [WEBHOOK_ROUTE] });
}

/** The notifications (spec §10) as OpenAPI `webhooks`: what a web app's endpoint receives, and how it is signed. */
function notificationWebhooks() {
  const header = (name: string, description: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } });
  return Object.fromEntries(
    NOTIFICATION_WEBHOOKS.map(({ name, model, summary }) => [
      name,
      {
        post: {
          operationId: `notification_${name.replace('.', '_')}`,
          summary,
          description:
            'POSTed to every URL of NOTIFY_URLS, signed per Standard Webhooks with NOTIFY_SECRET (the client package\'s ' +
            '`verifyNotification` checks it). Answer 2xx; any other answer, or none within 10 s, is retried for at least 24 hours.',
          parameters: [
            header('webhook-id', 'Unique per message, the same on every retry of it: deduplicate by it'),
            header('webhook-timestamp', 'Unix seconds of this attempt'),
            header('webhook-signature', '`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`'),
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${model.name}` } } } },
          responses: { '200': { description: 'Received (any 2xx will do); any other answer is retried' } },
          security: [],
        },
      },
    ]),
  );
}

/**
 * Serves the UI at /api/docs and the JSON at /api/docs-json. These routes are registered on Express
 * directly, outside Nest's router, so the global session guard never sees them: they are public.
 */
export function serveOpenApi(app: INestApplication, document: OpenAPIObject): void {
  SwaggerModule.setup(DOCS_PATH, app, document, {
    jsonDocumentUrl: DOCS_JSON_PATH,
    raw: ['json'],
    customSiteTitle: document.info.title,
  });
}

/** package.json sits at the project root, above both src/ops (tests) and dist/src/ops (build). */
function packageJson(): { version: string; license?: string } {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as { version: string; license?: string };
  }
  return { version: '0.0.0' };
}

/**
 * The document's license is package.json's. npm's `UNLICENSED` says the project grants no license (it has
 * chosen none), which no SPDX identifier says: named as it is, with npm's definition of the word as its URL.
 * Another value is taken for an SPDX expression, given as the identifier (npm's `SEE LICENSE IN <file>` would
 * need its file's URL here instead).
 */
function licenseOf(license: string | undefined): OpenAPIObject['info']['license'] {
  if (!license) return undefined;
  if (license === 'UNLICENSED') return { name: license, url: 'https://docs.npmjs.com/cli/configuring-npm/package-json#license' };
  return { name: license, identifier: license } as OpenAPIObject['info']['license'];
}
