import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { AppException } from './app-exception';
import { ErrorCode } from './error-codes';

export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  code: ErrorCode;
}

// Codes for errors raised by the framework rather than by our own code.
const DEFAULT_CODES: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  500: 'internal_error',
  503: 'service_unavailable',
};

/**
 * Every error leaves the service through here, in one shape. 5xx details (stack, SQL, driver or
 * provider text) go to the log with the request id and never into the response.
 */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ErrorFilter');

  catch(exception: unknown, host: ArgumentsHost) {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request & { id?: string }>();
    const res = ctx.getResponse<Response>();
    const body = toErrorBody(exception);
    if (body.statusCode >= 500) {
      this.logger.error({ msg: 'request failed', reqId: req.id, method: req.method, path: req.path, err: exception });
    }
    if (res.headersSent) return;
    if (exception instanceof AppException && exception.retryAfterS !== undefined) {
      res.setHeader('Retry-After', String(exception.retryAfterS));
    }
    res.status(body.statusCode).json(body);
  }
}

export function toErrorBody(exception: unknown): ErrorBody {
  if (exception instanceof AppException) {
    return shape(exception.getStatus(), exception.code, exception.message);
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const response = exception.getResponse();
    const cause = exception.cause as { type?: string } | undefined;
    if (status === 400 && (cause?.type === 'entity.parse.failed' || exception.cause instanceof SyntaxError)) {
      return shape(400, 'invalid_json', 'The request body is not valid JSON.');
    }
    if (status === 400 && typeof response === 'object' && Array.isArray((response as { message?: unknown }).message)) {
      // ValidationPipe: one line per failed constraint.
      return shape(400, 'validation_failed', ((response as { message: string[] }).message).join('; '));
    }
    if (status === 413) return shape(413, 'payload_too_large', 'The request body is larger than 1 MiB.');
    if (status >= 500) return shape(status, DEFAULT_CODES[status] ?? 'internal_error', genericMessage(status));
    const message = typeof response === 'string' ? response : (response as { message?: unknown }).message;
    return shape(status, DEFAULT_CODES[status] ?? 'error', typeof message === 'string' ? message : exception.message);
  }
  const timeout = databaseTimeout(exception);
  if (timeout === 'server') {
    return shape(503, 'database_timeout', 'The database did not answer in time; nothing was changed. Try again shortly.');
  }
  if (timeout === 'client') return shape(503, 'database_unavailable', 'The database did not answer. Try again shortly.');
  const status = httpStatusOf(exception);
  if (status === 413) return shape(413, 'payload_too_large', 'The request body is larger than 1 MiB.');
  if (status === 400 && (exception as { type?: string }).type === 'entity.parse.failed') {
    return shape(400, 'invalid_json', 'The request body is not valid JSON.');
  }
  if (status && status < 500) return shape(status, DEFAULT_CODES[status] ?? 'error', STATUS_CODES[status] ?? 'Error');
  return shape(HttpStatus.INTERNAL_SERVER_ERROR, 'internal_error', genericMessage(500));
}

function shape(statusCode: number, code: ErrorCode, message: string): ErrorBody {
  return { statusCode, error: STATUS_CODES[statusCode] ?? 'Error', message, code };
}

/** The error shape, for answers written outside Express (ops/http-server.ts). */
export const errorBody = shape;

/**
 * 'server': PostgreSQL cancelled a statement at DATABASE_STATEMENT_TIMEOUT_MS (57014) or a lock wait at its
 * lock_timeout (55P03), rolling its transaction back. 'client': the backstop, node-postgres stopped waiting
 * (DATABASE_QUERY_TIMEOUT_MS) for a database that did not answer at all. Both transient: 503, so a client
 * retries; only the first may promise that nothing was changed.
 */
function databaseTimeout(exception: unknown): 'server' | 'client' | undefined {
  const e = exception as { code?: unknown; message?: unknown; driverError?: { code?: unknown; message?: unknown } } | null;
  const code = e?.driverError?.code ?? e?.code;
  if (code === '57014' || code === '55P03') return 'server';
  return (e?.driverError?.message ?? e?.message) === 'Query read timeout' ? 'client' : undefined;
}

function genericMessage(status: number): string {
  return status === 503
    ? 'The service is temporarily unavailable. Try again shortly.'
    : 'Something went wrong on our side. Quote the X-Request-Id header when reporting it.';
}

/** body-parser and similar middleware errors carry `status` (or `statusCode`) of their own. */
function httpStatusOf(exception: unknown): number | undefined {
  const e = exception as { status?: unknown; statusCode?: unknown } | null;
  const status = e?.status ?? e?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 600 ? status : undefined;
}
