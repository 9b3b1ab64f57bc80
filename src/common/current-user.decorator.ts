import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { OrgRole } from './route-auth.decorators';

/** The caller authenticated by the global guard (a session, or the web app's JWT), with what its route declares of it. */
export interface AuthUser {
  id: string;
  email: string;
  /**
   * The organisation roles the route demands (`@Session({ orgRole })`); undefined: any member. Enforced by
   * `IdentityService.requireMember(caller, organisationId)` once the organisation is known.
   */
  orgRole?: readonly OrgRole[];
}

export const CurrentUser = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): AuthUser => ctx.switchToHttp().getRequest().user,
);
