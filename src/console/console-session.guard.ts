import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { parse } from 'cookie';
import type { Request } from 'express';
import { CONSOLE_COOKIE, ConsoleAuthService, Operator } from './console-auth.service';

/** No console session: the answer is the sign-in page (ConsoleExceptionFilter). */
export class ConsoleSignInRequired extends Error {}

/** A console POST without the CSRF token of its session. */
export class ConsoleCsrfRefused extends Error {}

export type ConsoleRequest = Request & { id?: string; operator?: Operator };

/** The console session's token, from its cookie alone (never a header: API credentials do not count here). */
export function consoleToken(req: Request): string | undefined {
  const header = req.headers.cookie;
  return header ? parse(header)[CONSOLE_COOKIE] : undefined;
}

/**
 * Every console page and action: a live console session (else the sign-in page), and on a POST the form
 * field `_csrf` matching that session's CSRF token (else 403, nothing done). Hands the operator on as
 * `req.operator`.
 */
@Injectable()
export class ConsoleSessionGuard implements CanActivate {
  constructor(private readonly auth: ConsoleAuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<ConsoleRequest>();
    const token = consoleToken(req);
    const operator = await this.auth.operator(token, req.id ?? null);
    if (!operator) throw new ConsoleSignInRequired();
    if (req.method !== 'GET' && req.method !== 'HEAD' && !this.auth.csrfMatches(token!, (req.body as Record<string, unknown> | undefined)?._csrf)) {
      throw new ConsoleCsrfRefused();
    }
    req.operator = operator;
    return true;
  }
}
