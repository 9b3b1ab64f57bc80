import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { toErrorBody } from '../common/error.filter';
import { ConsoleCsrfRefused, ConsoleRequest, ConsoleSignInRequired } from './console-session.guard';
import { ConsoleViews } from './console-views';

/**
 * Errors of console routes as HTML pages, not the API's JSON: no session → the sign-in page (303); a POST
 * without its CSRF token → 403 saying so; anything else → its status and the API's message for it (a 5xx
 * says nothing of its cause, which goes to the log with the request id, as in the API).
 */
@Catch()
export class ConsoleExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Console');

  constructor(private readonly views: ConsoleViews) {}

  catch(exception: unknown, host: ArgumentsHost) {
    const req = host.switchToHttp().getRequest<ConsoleRequest>();
    const res = host.switchToHttp().getResponse<Response>();
    if (res.headersSent) return;
    if (exception instanceof ConsoleSignInRequired) {
      res.redirect(303, '/console/sign-in');
      return;
    }
    const { statusCode, message } =
      exception instanceof ConsoleCsrfRefused
        ? { statusCode: 403, message: 'Refused: this form has no valid security token (CSRF). Nothing was changed. Reload the page and try again.' }
        : toErrorBody(exception);
    if (statusCode >= 500) this.logger.error({ msg: 'console request failed', reqId: req.id, method: req.method, path: req.path, err: exception });
    res
      .status(statusCode)
      .type('html')
      .setHeader('Cache-Control', 'no-store')
      .send(this.views.render('error', { title: `Error ${statusCode}`, operator: req.operator, message, requestId: req.id }));
  }
}
