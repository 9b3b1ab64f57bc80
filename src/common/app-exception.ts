import { HttpException } from '@nestjs/common';
import { ErrorCode, statusOf } from './error-codes';

/**
 * The one exception type the service throws on purpose. `code` is the stable machine code clients
 * switch on (its HTTP status comes with it, from ERROR_CODES); `message` is for a person. The global
 * filter turns it into the shared error shape.
 */
export class AppException extends HttpException {
  /** Seconds a client should wait before trying again, sent as Retry-After (429, 503). */
  readonly retryAfterS?: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    opts: { retryAfterS?: number } = {},
  ) {
    super(message, statusOf(code));
    this.retryAfterS = opts.retryAfterS;
  }
}

export const unauthenticated = () => new AppException('unauthenticated', 'A valid session is required.');

/** Same body whether the organisation exists or not, so existence does not leak. */
export const notAMember = () =>
  new AppException('organisation_forbidden', 'You are not a member of this organisation.');

export const roleRequired = (roles: readonly string[]) =>
  new AppException('role_forbidden', `This action needs the role ${roles.join(' or ')} in the organisation.`);
