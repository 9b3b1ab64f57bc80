import { Controller, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Session } from '../common/route-auth.decorators';
import { LicensingService } from '../licensing/licensing.service';
import { IdParams, OrganisationRecord, UserRecord } from './admin.dto';
import { IdentityService } from './identity.service';
import { ROLES, Role } from './membership.entity';

/** An organisation as the provisioning API answers it, with the caller's role and its license tier. */
class MyOrganisation extends OrganisationRecord {
  @ApiProperty({ enum: ROLES })
  role: Role;
  @ApiProperty({ example: 'pro', description: 'The license tier (GET /api/licensing/status tells whether it is active)' })
  tier: string;
}

class MeResponse {
  @ApiProperty({ type: UserRecord })
  user: UserRecord;
  @ApiProperty({ type: [MyOrganisation] })
  organisations: MyOrganisation[];
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

/** The signed-in caller's own view (SPEC 3): who they are, where they are a member, and who else is. */
@ApiTags('identity')
@Session()
@Controller('api')
export class MeController {
  constructor(
    private readonly identity: IdentityService,
    private readonly licensing: LicensingService,
  ) {}

  @Get('me')
  @ApiOperation({ summary: 'The caller and their organisations, with their role and the license tier' })
  @ApiOkResponse({ type: MeResponse })
  @ApiErrors(401)
  async me(@CurrentUser() caller: AuthUser): Promise<MeResponse> {
    const { user, organisations } = await this.identity.profileOf(caller.id);
    // One status read per organisation: a user belongs to a handful, and the license is derived in one place.
    const tiers = await Promise.all(organisations.map((o) => this.licensing.status(o.id, null).then((s) => s.license.tier)));
    return { user, organisations: organisations.map((o, i) => ({ ...o, tier: tiers[i] })) };
  }

  @Get('organisations/:id/members')
  @ApiOperation({ summary: "An organisation's members (members only; 403 otherwise, the same whether it exists or not)" })
  @ApiOkResponse({ type: MembersResponse })
  @ApiErrors(400, 401, 403)
  async members(@CurrentUser() caller: AuthUser, @Param() params: IdParams): Promise<MembersResponse> {
    return { data: await this.identity.membersFor(caller, params.id) };
  }
}
