import { Controller, Get, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { QueryCaller, QueryVerifiedCaller, SessionOrServiceKey } from '../common/route-auth.decorators';
import { EntitlementClaims, EntitlementToken, EntitlementTokenQuery, TokenLimit } from './entitlement-token.dto';
import { EntitlementTokenService } from './entitlement-token.service';

@ApiTags('licensing')
@Controller('api/licensing')
export class EntitlementTokenController {
  constructor(private readonly tokens: EntitlementTokenService) {}

  @Get('entitlements/token')
  // The same callers as the entitlements read, verified by its statement.
  @SessionOrServiceKey({ verifiedBy: 'query' })
  @ApiOperation({
    summary: "An organisation's entitlements, signed, to gate features offline (member, trusted JWT or service key)",
    description:
      'A compact JWS of the entitlements without usage (see EntitlementClaims), valid for ttl_s seconds, verifiable against ' +
      '/.well-known/jwks.json. 503 signing_key_missing in production when ENTITLEMENT_SIGNING_KEYS is not set.',
  })
  // The token's contentSchema refers to EntitlementClaims, which Nest does not follow: registered here.
  @ApiExtraModels(EntitlementClaims, TokenLimit)
  @ApiOkResponse({ type: EntitlementToken })
  @ApiErrors(400, 401, 403, 404, 503)
  token(@QueryVerifiedCaller() caller: QueryCaller, @Query() query: EntitlementTokenQuery): Promise<EntitlementToken> {
    return this.tokens.issue(query.organisation_id, caller, query.ttl_s);
  }
}
