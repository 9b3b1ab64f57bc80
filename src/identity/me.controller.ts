import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Session } from '../common/route-auth.decorators';
import { IdentityService } from './identity.service';

/** Who the session belongs to and where they are a member: what a web app shows after login. */
@ApiTags('identity')
@Session()
@Controller('api/me')
export class MeController {
  constructor(private readonly identity: IdentityService) {}

  @Get()
  @ApiOperation({ summary: 'The caller and their memberships' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['id', 'email', 'memberships'],
      properties: {
        id: { type: 'string', format: 'uuid' },
        email: { type: 'string', format: 'email' },
        memberships: {
          type: 'array',
          items: {
            type: 'object',
            required: ['organisation_id', 'role'],
            properties: {
              organisation_id: { type: 'string', format: 'uuid' },
              role: { type: 'string', enum: ['owner', 'admin', 'member'] },
            },
          },
        },
      },
    },
  })
  @ApiErrors(401)
  async me(@CurrentUser() user: AuthUser) {
    return { id: user.id, email: user.email, memberships: await this.identity.membershipsOf(user.id) };
  }
}
