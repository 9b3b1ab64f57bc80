import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { hashToken } from '../identity/session.service';
import { sessionToken } from '../identity/session.strategy';
import { unauthenticated } from './app-exception';

type WithTokenHash = Request & { sessionTokenHash?: Buffer };

/**
 * For a @Public() route whose own statement verifies the session, so that authenticating and answering take
 * one database round trip instead of two (the status read, the web app's hottest call): 401 unless the
 * request carries a session token, whose hash the handler gets through @SessionTokenHash().
 *
 * It does NOT look the token up. A handler behind it must match the hash with `liveSession()` in the same
 * statement that reads its data, and answer 401 when no live session matches.
 */
@Injectable()
export class SessionTokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<WithTokenHash>();
    const token = sessionToken(req);
    if (!token) throw unauthenticated();
    req.sessionTokenHash = hashToken(token);
    return true;
  }
}

/** The SHA-256 of the request's session token, set by SessionTokenGuard; still to be verified. */
export const SessionTokenHash = createParamDecorator((_: unknown, ctx: ExecutionContext): Buffer => {
  const hash = ctx.switchToHttp().getRequest<WithTokenHash>().sessionTokenHash;
  if (!hash) throw new Error('@SessionTokenHash() needs SessionTokenGuard on the route');
  return hash;
});
