import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import passport from 'passport';
import { SessionStrategy } from '../identity/session.strategy';
import { unauthenticated } from './app-exception';
import { IS_PUBLIC } from './public.decorator';

/**
 * Applied globally: every route needs a session unless it is marked @Public().
 *
 * It runs this application's own SessionStrategy instance rather than looking the strategy up by name in
 * passport's process-wide registry (what `AuthGuard('session')` does): with two applications in one process
 * (tests of several instances) the registry holds only the last one, whose database may already be closed.
 */
@Injectable()
export class SessionAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: SessionStrategy,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()]);
    if (isPublic) return true;
    const http = context.switchToHttp();
    const req = http.getRequest<Request & { user?: unknown }>();
    const res = http.getResponse<Response>();
    return new Promise((resolve, reject) => {
      // A per-request object over the strategy: passport attaches its success/fail callbacks to it.
      const perRequest = Object.create(this.strategy) as SessionStrategy;
      passport.authenticate(perRequest, { session: false }, (err: unknown, user: unknown) => {
        if (err) return reject(err);
        if (!user) return reject(unauthenticated());
        req.user = user;
        resolve(true);
      })(req, res, reject);
    });
  }
}
