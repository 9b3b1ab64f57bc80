import type { NextFunction, Request, Response } from 'express';
import { httpRequestDuration } from '../common/metrics';

/**
 * Times every request into `http_request_duration_seconds`. The `route` label is the pattern Express
 * matched (`/api/licensing/status`, `/api/things/:id`), never the raw URL, so query strings and ids
 * don't create new series; a request no route matched (404, or answered by middleware) is `unmatched`.
 * It runs on every request: one timer and one `finish` listener, nothing else.
 */
export function requestMetrics(req: Request, res: Response, next: NextFunction): void {
  const end = httpRequestDuration.startTimer();
  res.once('finish', () => end({ method: req.method, route: routeOf(req), status: res.statusCode }));
  next();
}

export function routeOf(req: Request): string {
  const path: unknown = req.route?.path;
  return typeof path === 'string' ? req.baseUrl + path : 'unmatched';
}
