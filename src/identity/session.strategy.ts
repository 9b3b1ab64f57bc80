import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-custom';
import { unauthenticated } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { SessionService } from './session.service';

// Tokens are 43 base64url characters; anything far off is not worth a database round trip.
const MAX_TOKEN_LENGTH = 256;

/** Reads the session token from `Authorization: Bearer <token>` or the `session` cookie. */
export function sessionToken(req: Request): string | undefined {
  const token = rawSessionToken(req);
  return token && token.length <= MAX_TOKEN_LENGTH ? token : undefined;
}

function rawSessionToken(req: Request): string | undefined {
  const auth = req.headers.authorization;
  if (auth) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return match?.[1];
  }
  const cookie = req.headers.cookie;
  if (!cookie) return undefined;
  for (const part of cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === 'session') {
      const value = part.slice(eq + 1).trim();
      return value ? decodeURIComponentSafe(value) : undefined;
    }
  }
  return undefined;
}

function decodeURIComponentSafe(value: string): string | undefined {
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

@Injectable()
export class SessionStrategy extends PassportStrategy(Strategy, 'session') {
  constructor(private readonly sessions: SessionService) {
    super();
  }

  async validate(req: Request): Promise<AuthUser> {
    const token = sessionToken(req);
    if (!token) throw unauthenticated();
    const user = await this.sessions.authenticate(token);
    if (!user) throw unauthenticated();
    return user;
  }
}
