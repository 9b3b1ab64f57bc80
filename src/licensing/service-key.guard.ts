import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { SessionStrategy } from '../identity/session.strategy';

export const SERVICE_KEY_HEADER = 'x-service-key';

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/** Checks `X-Service-Key` against SERVICE_API_KEYS; throws 401/403 unless it matches one. */
@Injectable()
export class ServiceKeys {
  // Hashing both sides gives equal-length buffers, so timingSafeEqual never leaks a key's length.
  private readonly hashes: Buffer[];

  constructor(config: AppConfig) {
    this.hashes = config.serviceApiKeys.map(sha256);
  }

  verify(header: string | string[] | undefined): void {
    if (!this.hashes.length) {
      throw new AppException(403, 'service_keys_not_configured', 'Usage reporting is disabled: SERVICE_API_KEYS is not set.');
    }
    if (typeof header !== 'string' || !header) {
      throw new AppException(401, 'service_key_required', 'The X-Service-Key header is required.');
    }
    const given = sha256(header);
    // Compare with every key, without stopping at the first match.
    const matches = this.hashes.reduce((found, key) => timingSafeEqual(given, key) || found, false);
    if (!matches) throw new AppException(401, 'invalid_service_key', 'The X-Service-Key header is not a valid service key.');
  }
}

/** Trusted back-ends only. Routes using it are @Public() for the session guard. */
@Injectable()
export class ServiceKeyGuard implements CanActivate {
  constructor(private readonly keys: ServiceKeys) {}

  canActivate(context: ExecutionContext): boolean {
    this.keys.verify(context.switchToHttp().getRequest<Request>().headers[SERVICE_KEY_HEADER]);
    return true;
  }
}

/**
 * A service key when the request carries `X-Service-Key` (then `req.user` stays unset), else a session.
 * Routes using it are @Public() for the global session guard, which would refuse back-ends.
 */
@Injectable()
export class ServiceKeyOrSessionGuard implements CanActivate {
  constructor(
    private readonly keys: ServiceKeys,
    private readonly sessions: SessionStrategy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request & { user?: AuthUser }>();
    const key = req.headers[SERVICE_KEY_HEADER];
    if (key !== undefined) {
      this.keys.verify(key);
      return true;
    }
    // The same session check as the global guard (401 when missing, unknown, expired or revoked).
    req.user = await this.sessions.validate(req);
    return true;
  }
}
