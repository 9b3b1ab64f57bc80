import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id (a well-formed incoming X-Request-Id is kept, for tracing across services),
 * answers it in the X-Request-Id header, and logs one line when the response is sent. Headers are never
 * logged. Deliberately small: it runs on every request (pino-http cost ~12% of the CPU of a status read).
 */
export function requestLogging(logger: Logger) {
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
      logger[level]({ reqId: id, method: req.method, url: req.originalUrl, status, ms }, 'request completed');
    });
    next();
  };
}
