import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError } from 'typeorm';
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
  const database = databaseFailure(exception);
  if (database === 'timeout') {
    return shape(503, 'database_timeout', 'The database did not answer in time; nothing was changed. Try again shortly.');
  }
  if (database === 'unavailable') return shape(503, 'database_unavailable', 'The database could not be reached. Try again shortly.');
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

// PostgreSQL cancelled the statement (DATABASE_STATEMENT_TIMEOUT_MS: 57014, lock_timeout: 55P03) and rolled
// its transaction back.
const CANCELLED = new Set(['57014', '55P03']);
// The connection failed, not the statement: class 08 (connection exception), 57P01-57P03 (the server shutting
// down, crashed, or not accepting connections yet), 53300 (too many connections).
const CONNECTION_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1-3]|53300)$/;
const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// node-postgres's own errors: a connection lost, none free in time (pool), an answer that never came
// (DATABASE_QUERY_TIMEOUT_MS, the backstop for a database that does not answer at all).
const CONNECTION_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect$|Query read timeout$|Client has encountered a connection error|Client was closed and is not queryable)/;

/**
 * 'timeout': PostgreSQL gave up on the statement, so nothing was changed. 'unavailable': the database could not
 * be reached or did not answer, whether from the driver directly (getting a connection) or wrapped by TypeORM
 * (QueryFailedError's driverError) or as an error's cause. Both transient: 503, so a client retries. A failed
 * statement rolls its transaction back; only a connection lost while its COMMIT was on the way leaves the
 * outcome unknown, which is why the 'unavailable' message promises nothing.
 */
function databaseFailure(exception: unknown): 'timeout' | 'unavailable' | undefined {
  for (let e = exception as DriverError | undefined, depth = 0; e && depth < 4; e = e.driverError ?? e.cause, depth++) {
    const code = typeof e.code === 'string' ? e.code : undefined;
    if (code && CANCELLED.has(code)) return 'timeout';
    if (code && (CONNECTION_SQLSTATE.test(code) || CONNECTION_ERRNOS.has(code))) return 'unavailable';
    if (typeof e.message === 'string' && CONNECTION_MESSAGE.test(e.message)) return 'unavailable';
    // TypeORM's answer to a statement (through the runner, or its manager) on a runner whose connection it
    // released after the connection failed (PostgreSQL ended it mid-transaction): the loss of the database.
    if (e instanceof QueryRunnerAlreadyReleasedError || e instanceof QueryRunnerProviderAlreadyReleasedError) return 'unavailable';
  }
  return undefined;
}

interface DriverError {
  code?: unknown;
  message?: unknown;
  driverError?: DriverError;
  cause?: DriverError;
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
