import { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { AppConfig } from '../config/app-config';
import { DOCS_PATH } from './openapi';

/**
 * Security headers, CORS and cross-origin request protection.
 *
 * - helmet everywhere. The API and the sandbox's server-rendered pages (plain HTML forms, no scripts)
 *   get a CSP that allows no script at all; only the Swagger UI under /api/docs may load its own
 *   scripts and inline styles.
 * - CORS for the web app's origin (APP_URL) only, with credentials, since it may use cookie sessions.
 * - Nest's cross-origin protection (Sec-Fetch-Site / Origin): a browser form or fetch from another
 *   site cannot make a state-changing request with the user's cookie. Non-browser clients (the
 *   provider's webhooks, back-ends with a service key) send neither header and are not affected.
 */
export function applyHttpSecurity(app: NestExpressApplication, config: AppConfig): void {
  const appOrigin = config.appUrl.origin;
  const common = {
    frameguard: { action: 'deny' as const },
    referrerPolicy: { policy: 'no-referrer' as const },
  };
  const api = helmet({
    ...common,
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
  const docs = helmet({
    ...common,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:'],
        fontSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        objectSrc: ["'none'"],
        formAction: ["'self'"],
        baseUri: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
  });
  app.use((req: Request, res: Response, next: NextFunction) => (isDocs(req.path) ? docs : api)(req, res, next));

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

function isDocs(path: string): boolean {
  return path === DOCS_PATH || path.startsWith(`${DOCS_PATH}/`);
}
