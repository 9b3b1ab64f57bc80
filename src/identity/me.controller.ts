import { Controller, Get } from '@nestjs/common';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { IdentityService } from './identity.service';

/** Who the session belongs to and where they are a member: what a web app shows after login. */
@Controller('api/me')
export class MeController {
  constructor(private readonly identity: IdentityService) {}

  @Get()
  async me(@CurrentUser() user: AuthUser) {
    return { id: user.id, email: user.email, memberships: await this.identity.membershipsOf(user.id) };
  }
}
