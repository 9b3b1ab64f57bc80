import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (a well-formed incoming X-Request-Id is kept, for tracing across services),
 * answers it in the X-Request-Id header, and logs one line when the response is sent. Headers are never
 * logged, nor the query values of `credentialPaths` (routes whose query carries a credential: a value read
 * from the log must not sign anyone in). Deliberately small: it runs on every request (pino-http cost ~12% of
 * the CPU of a status read).
 */
export function requestLogging(logger: Logger, credentialPaths: readonly string[] = []) {
  const hidden = new Set(credentialPaths.map(routeKey));
  return (req: Request & { id?: string }, res: Response, next: NextFunction) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const started = performance.now();
    res.once('finish', () => {
      const status = res.statusCode;
      const level = status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      const ms = Math.round((performance.now() - started) * 10) / 10;
      logger[level]({ reqId: id, method: req.method, url: loggedUrl(req.originalUrl, hidden), status, ms }, 'request completed');
    });
    next();
  };
}

/**
 * The URL as logged: on a route of `hidden`, its path with the query's names and without their values
 * (`/console/oidc/callback?code=&state=`), so the log still says what kind of answer came back.
 */
function loggedUrl(url: string, hidden: ReadonlySet<string>): string {
  const q = url.indexOf('?');
  if (q < 0 || !hidden.has(routeKey(url.slice(0, q)))) return url;
  const names = url
    .slice(q + 1)
    .split('&')
    .map((pair) => pair.split('=')[0])
    .join('=&');
  return `${url.slice(0, q)}?${names}=`;
}

/**
 * A path as Express routes it by default: case-insensitive, a trailing slash optional, percent-escapes of
 * plain characters the same (so `/Console/Sign-In/Link/` is the link's route too).
 */
function routeKey(path: string): string {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: compared as sent.
  }
  return decoded.toLowerCase().replace(/\/+$/, '');
}
