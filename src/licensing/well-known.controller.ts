import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../common/route-auth.decorators';
import { JsonWebKeySet } from './entitlement-token.dto';
import { EntitlementSigningKeys } from './signing-keys';

export const JWKS_ROUTE = '/.well-known/jwks.json';

/**
 * The public keys of signed entitlements (spec §12). Cached for five minutes: a verifier that meets an unknown
 * `kid` fetches again (the client's `verifyEntitlements` with a remote set does), so a newly added key is
 * picked up at once; see docs/operations.md for the rotation's order.
 */
@ApiTags('licensing')
@Controller()
export class WellKnownController {
  constructor(private readonly keys: EntitlementSigningKeys) {}

  @Get(JWKS_ROUTE)
  @Public()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: 'The public keys that verify entitlement tokens (public, cacheable)',
    description:
      'A JWK set (RFC 7517): every key of ENTITLEMENT_SIGNING_KEYS (the first signs, the others still verify the tokens ' +
      'they signed), or this machine\'s generated key in development. Empty in production when no key is configured.',
  })
  @ApiOkResponse({ type: JsonWebKeySet })
  jwks(): JsonWebKeySet {
    return this.keys.jwks;
  }
}
