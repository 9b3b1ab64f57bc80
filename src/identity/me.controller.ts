import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsUUID } from 'class-validator';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { QueryInt } from '../common/query-int.decorator';
import { Session } from '../common/route-auth.decorators';
import { IdParams, OrganisationRecord, UserRecord } from './admin.dto';
import { IdentityService } from './identity.service';
import { ROLES, Role } from './membership.entity';

// A page of organisations: the default is also the most, so a user with up to 100 needs no pagination.
const ME_PAGE_MAX = 100;

/** An organisation as the provisioning API answers it, with the caller's role and its license tier. */
class MyOrganisation extends OrganisationRecord {
  @ApiProperty({ enum: ROLES })
  role: Role;
  @ApiProperty({ example: 'pro', description: 'The license tier (GET /api/licensing/status tells whether it is active)' })
  tier: string;
}

/** Pagination of the caller's organisations, in the style of the billing history's. */
class MeQuery {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: ME_PAGE_MAX, default: ME_PAGE_MAX })
  @IsOptional()
  @QueryInt({ min: 1, max: ME_PAGE_MAX })
  limit?: number;

  @ApiPropertyOptional({ format: 'uuid', description: 'id of the last organisation of the previous page' })
  @IsOptional()
  @IsUUID()
  starting_after?: string;
}

class MeResponse {
  @ApiProperty({ type: UserRecord })
  user: UserRecord;
  @ApiProperty({ type: [MyOrganisation], description: 'Oldest membership first; at most `limit`' })
  organisations: MyOrganisation[];
  @ApiProperty({ description: 'More organisations follow: pass the last id as starting_after' })
  has_more: boolean;
}

class Member {
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ example: 'ada@example.com' })
  email: string;
  @ApiProperty({ enum: ROLES })
  role: Role;
}

class MembersResponse {
  @ApiProperty({ type: [Member] })
  data: Member[];
}

/** The signed-in caller's own view (spec §3): who they are, where they are a member, and who else is. */
@ApiTags('identity')
@Session()
@Controller('api')
export class MeController {
  constructor(private readonly identity: IdentityService) {}

  @Get('me')
  @ApiOperation({ summary: 'The caller and their organisations, with their role and the license tier, a page at a time' })
  @ApiOkResponse({ type: MeResponse })
  @ApiErrors(400, 401)
  me(@CurrentUser() caller: AuthUser, @Query() query: MeQuery): Promise<MeResponse> {
    return this.identity.profilePage(caller.id, { limit: query.limit ?? ME_PAGE_MAX, startingAfter: query.starting_after });
  }

  @Get('organisations/:id/members')
  @ApiOperation({ summary: "An organisation's members (members only; 403 otherwise, the same whether it exists or not)" })
  @ApiOkResponse({ type: MembersResponse })
  @ApiErrors(400, 401, 403)
  async members(@CurrentUser() caller: AuthUser, @Param() params: IdParams): Promise<MembersResponse> {
    return { data: await this.identity.membersFor(caller, params.id) };
  }
}
