import { HttpException } from '@nestjs/common';

/**
 * The one exception type the service throws on purpose. `code` is the stable machine code clients
 * switch on; `message` is for a person. The global filter turns it into the shared error shape.
 */
export class AppException extends HttpException {
  constructor(
    status: number,
    readonly code: string,
    message: string,
  ) {
    super(message, status);
  }
}

export const unauthenticated = () => new AppException(401, 'unauthenticated', 'A valid session is required.');

/** Same body whether the organisation exists or not, so existence does not leak. */
export const notAMember = () =>
  new AppException(403, 'organisation_forbidden', 'You are not a member of this organisation.');

export const roleRequired = (roles: readonly string[]) =>
  new AppException(403, 'role_forbidden', `This action needs the role ${roles.join(' or ')} in the organisation.`);
