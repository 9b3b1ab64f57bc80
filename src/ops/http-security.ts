import { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { AppConfig } from '../config/app-config';
import { DOCS_PATH } from './openapi';

// The Swagger UI under /api/docs is the one page that may load scripts: its own, from this origin.
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "form-action 'self'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join(';');

// The operator console (spec §14): its own scripts and stylesheet, from this origin only; nothing inline.
const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join(';');

/**
 * Security headers, CORS and cross-origin request protection.
 *
 * - Nest's own security headers (helmet 8's set, resolved once at start and written by one hook, not a
 *   chain of middleware per request). The API and the sandbox's server-rendered pages (plain HTML forms,
 *   no scripts) get a CSP that allows no script at all; only the Swagger UI under /api/docs may load its
 *   own scripts and inline styles, and the operator console under /console its own scripts and styles.
 * - CORS for the web app's origin (APP_URL) only, with credentials, since it may use cookie sessions.
 * - Nest's cross-origin protection (Sec-Fetch-Site / Origin): a browser form or fetch from another
 *   site cannot make a state-changing request with the user's cookie. Non-browser clients (the
 *   provider's webhooks, back-ends with a service key) send neither header and are not affected.
 */
export function applyHttpSecurity(app: NestExpressApplication, config: AppConfig): void {
  const appOrigin = config.appUrl.origin;
  app.useSecurityHeaders({
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        // The sandbox's checkout form posts here, then redirects to a return URL under APP_URL.
        formAction: ["'self'", appOrigin],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
      },
    },
  });
  app.use(DOCS_PATH, (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    next();
  });
  app.use('/console', (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    next();
  });

  app.enableCors({
    origin: [appOrigin],
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'X-Service-Key'],
    exposedHeaders: ['X-Request-Id'],
    maxAge: 600,
  });
  app.enableCsrfProtection({ trustedOrigins: [appOrigin] });
}
