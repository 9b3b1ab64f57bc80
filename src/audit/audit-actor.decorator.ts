import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { AuditActor } from './audit.service';

/**
 * The caller of a changing route, for the audit log: the service key's name (set by the route guard; the
 * key itself never leaves it) or the session's user, and the request's id (request-logging.ts).
 */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): AuditActor => {
  const req = ctx.switchToHttp().getRequest<{ serviceKey?: string; user?: { id: string }; id?: string }>();
  const actor = req.serviceKey !== undefined ? `service_key:${req.serviceKey}` : `user:${req.user?.id ?? 'unknown'}`;
  return { actor, requestId: req.id ?? null };
});
