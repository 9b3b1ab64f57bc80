import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import passport from 'passport';
import { AppException, unauthenticated } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { OrgRole, QueryCaller, ROUTE_AUTH, RouteAuth } from '../common/route-auth.decorators';
import { secretMatcher } from '../common/secret-match';
import { AppConfig } from '../config/app-config';
import { JwtStrategy } from './jwt.strategy';
import { Role } from './membership.entity';
import { SERVICE_KEY_HEADER, ServiceKeys } from './service-keys';
import { hashToken } from './session.service';
import { sessionToken, SessionStrategy } from './session.strategy';

/** A route that declares nothing keeps the service's default: a session. */
const DEFAULT_AUTH: RouteAuth = { kind: 'session', verifiedBy: 'guard' };

type AuthRequest = Request & { user?: AuthUser; queryCaller?: QueryCaller; serviceKey?: string };

// The vocabulary names the roles without importing identity; this fails to compile if the two sets drift.
type SameSet<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _rolesMatch: SameSet<OrgRole, Role> = true;

/**
 * The one guard (global) that decides who may call a route. It reads the route's declaration from the
 * vocabulary in src/common/route-auth.decorators.ts (`@Public()`, `@Session()`, `@ServiceKey()`, ...) and
 * authenticates accordingly; the errors are those each decorator documents.
 */
@Injectable()
export class RouteAuthGuard implements CanActivate {
  private readonly metricsToken?: (given: string) => boolean;

  constructor(
    private readonly reflector: Reflector,
    private readonly strategy: SessionStrategy,
    private readonly jwt: JwtStrategy,
    private readonly serviceKeys: ServiceKeys,
    config: AppConfig,
  ) {
    this.metricsToken = config.metricsToken ? secretMatcher([config.metricsToken]) : undefined;
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const auth =
      this.reflector.getAllAndOverride<RouteAuth | undefined>(ROUTE_AUTH, [context.getHandler(), context.getClass()]) ??
      DEFAULT_AUTH;
    const http = context.switchToHttp();
    const req = http.getRequest<AuthRequest>();
    switch (auth.kind) {
      case 'public':
        return true;
      case 'webhookSignature':
        // The route's own guard (WebhookSignatureGuard, in the webhook module) runs next, on the raw body.
        return true;
      case 'consoleSession':
        // The console's own guard (ConsoleSessionGuard) runs next, on the console's cookie alone.
        return true;
      case 'session':
        if (auth.verifiedBy === 'query') return this.identifyQueryCaller(req, http.getResponse<Response>());
        return this.authenticateSession(req, http.getResponse<Response>(), auth.orgRole);
      case 'serviceKey':
        // A user's credential where a back-end's key belongs is refused as such (403), not as "no key" (401).
        if (req.headers[SERVICE_KEY_HEADER] === undefined && (req.headers.authorization || sessionToken(req))) {
          throw new AppException('session_not_accepted', 'This route is for back-ends: send X-Service-Key, not a user session or token.');
        }
        req.serviceKey = this.serviceKeys.verify(req.headers[SERVICE_KEY_HEADER]);
        return true;
      case 'sessionOrServiceKey':
        // A request carrying a key is a back-end: the key alone decides, even beside a session, and there is no user.
        if (req.headers[SERVICE_KEY_HEADER] !== undefined) {
          req.serviceKey = this.serviceKeys.verify(req.headers[SERVICE_KEY_HEADER]);
          if (auth.verifiedBy === 'query') req.queryCaller = { serviceKey: req.serviceKey };
          return true;
        }
        if (auth.verifiedBy === 'query') return this.identifyQueryCaller(req, http.getResponse<Response>());
        return this.authenticateSession(req, http.getResponse<Response>());
      case 'metricsToken':
        return this.requireMetricsToken(req);
    }
  }

  /**
   * A session, or the web app's own JWT: when JWTs are enabled (AUTH_JWT_JWKS_URL) and the bearer credential
   * has a JWT's shape (three dot-separated segments; a session token never has a dot), the JwtStrategy
   * decides, else the SessionStrategy. Either way the caller is a user of this service, whose memberships
   * and roles decide the rest.
   */
  private async authenticateSession(req: AuthRequest, res: Response, orgRole?: readonly OrgRole[]): Promise<boolean> {
    const user = await this.runStrategy(this.jwt.accepts(req) ? this.jwt : this.strategy, req, res);
    req.user = { id: user.id, email: user.email, orgRole };
    return true;
  }

  /**
   * Runs this application's own strategy instance rather than looking the strategy up by name in
   * passport's process-wide registry (what @nestjs/passport's `AuthGuard('session')` does): with two
   * applications in one process (tests of several instances) the registry holds only the last one, whose
   * database may already be closed.
   */
  private runStrategy(strategy: SessionStrategy | JwtStrategy, req: AuthRequest, res: Response): Promise<AuthUser> {
    return new Promise((resolve, reject) => {
      // A per-request object over the strategy: passport attaches its success/fail callbacks to it.
      const perRequest = Object.create(strategy) as typeof strategy;
      passport.authenticate(perRequest, { session: false }, (err: unknown, user: AuthUser | false | null) => {
        if (err) return reject(err);
        if (!user) return reject(unauthenticated());
        resolve(user);
      })(req, res, reject);
    });
  }

  /** A user for a route whose statement verifies the session: a JWT is verified here, a session token by the route. */
  private identifyQueryCaller(req: AuthRequest, res: Response): boolean | Promise<boolean> {
    return this.jwt.accepts(req) ? this.identifyJwtCaller(req, res) : this.requireSessionToken(req);
  }

  /**
   * `@Session({ verifiedBy: 'query' })` with a session token: it must be present; the route's statement
   * verifies its hash (no round trip here).
   */
  private requireSessionToken(req: AuthRequest): boolean {
    const token = sessionToken(req);
    if (!token) throw unauthenticated();
    req.queryCaller = { sessionTokenHash: hashToken(token) };
    return true;
  }

  /** `@Session({ verifiedBy: 'query' })` with a JWT: verified here; the route's statement gets its user. */
  private async identifyJwtCaller(req: AuthRequest, res: Response): Promise<boolean> {
    const user = await this.runStrategy(this.jwt, req, res);
    req.queryCaller = { userId: user.id };
    return true;
  }

  /** Open while METRICS_TOKEN is unset (keep /metrics off the public network then). */
  private requireMetricsToken(req: AuthRequest): boolean {
    if (!this.metricsToken) return true;
    const given = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!this.metricsToken(given)) {
      throw new AppException('metrics_token_required', 'A valid metrics token is required.');
    }
    return true;
  }
}
