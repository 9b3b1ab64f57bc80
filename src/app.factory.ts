import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { AppModule } from './app.module';
import { AppConfig } from './config/app-config';
import { createLogger, PinoNestLogger } from './common/logger';
import { jsonBodyLimits, jsonOnlyBodies, rejectNulInUrl, rejectReservedQueryNames } from './common/input-limits';
import { requestLogging } from './common/request-logging';
import { CREDENTIAL_QUERY_PATHS } from './console/sign-in.controller';
import { applyHttpSecurity } from './ops/http-security';
import { hardenHttpServer } from './ops/http-server';
import { buildOpenApiDocument, serveOpenApi } from './ops/openapi';
import { requestMetrics } from './ops/request-metrics';
import { WEBHOOK_ROUTE } from './webhook/webhook.controller';

export const BODY_LIMIT = '1mb';
// Signed by the provider and verified over its raw bytes: its contents are the webhook's to judge.

/** Builds the HTTP application exactly as production runs it; tests use the same function. */
export async function createApp(config: AppConfig, logger: Logger = createLogger(config.logLevel, config.nodeEnv)) {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    // The webhook signature is verified over the exact bytes received.
    rawBody: true,
    logger: new PinoNestLogger(logger),
  });
  app.disable('x-powered-by');
  // Responses are small, per-caller and uncached; a SHA-1 of every body for an ETag nobody sends back is waste.
  app.set('etag', false);
  // First, so that it times everything the service does with a request.
  app.use(requestMetrics);
  // Before the body parsers, so that even a 413 or malformed-JSON answer carries X-Request-Id.
  app.use(requestLogging(logger, CREDENTIAL_QUERY_PATHS));
  applyHttpSecurity(app, config);
  app.use(rejectNulInUrl);
  app.use(rejectReservedQueryNames);
  // After the cross-origin protection (a cross-site form post is 403 first), before any parser.
  app.use(jsonOnlyBodies('/api/', [WEBHOOK_ROUTE]));
  app.useBodyParser('json', { limit: BODY_LIMIT });
  // For the sandbox's HTML forms only: the API takes JSON alone (jsonOnlyBodies).
  app.useBodyParser('urlencoded', { limit: BODY_LIMIT, extended: false });
  // Before validation: its recursion is what a deeply nested body would overflow.
  app.use(jsonBodyLimits([WEBHOOK_ROUTE]));
  hardenHttpServer(app.getHttpServer(), { requestTimeoutS: config.requestTimeoutS, logger });
  // Built once here, from the controllers' decorators; served as is on every request.
  serveOpenApi(app, buildOpenApiDocument(app, config.tiers));
  return app;
}

