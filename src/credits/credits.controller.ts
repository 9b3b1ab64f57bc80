import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { QueryCaller, QueryVerifiedCaller, SessionOrServiceKey } from '../common/route-auth.decorators';
import { CreditsQuery, CreditsResponse, LedgerPage, LedgerQuery } from './credits-routes.dto';
import { CreditsReadService } from './credits-read.service';

/** An organisation's credits (spec §16.2): its balances and grants, and its ledger. */
@ApiTags('credits')
@Controller('api/licensing/credits')
export class CreditsController {
  constructor(private readonly reads: CreditsReadService) {}

  @Get()
  // The caller is checked by the read's own statement: one round trip.
  @SessionOrServiceKey({ verifiedBy: 'query' })
  @ApiOperation({
    summary: "An organisation's credits metrics: the included amount, balance, reserved, available and the grants that count (member, trusted JWT or service key)",
    description:
      'One entry per metric whose policy in the tier in force is credits, in table order (none: an empty list). available = what is ' +
      'left of the included amount + balance − reserved. The grants are those that count now (effective, not expired, not voided, ' +
      'something left), in the order reports draw on them.',
  })
  @ApiOkResponse({ type: CreditsResponse })
  @ApiErrors(400, 401, 403, 404)
  credits(@QueryVerifiedCaller() caller: QueryCaller, @Query() query: CreditsQuery): Promise<CreditsResponse> {
    return this.reads.credits(query.organisation_id, caller);
  }

  @Get('ledger')
  @SessionOrServiceKey({ verifiedBy: 'query' })
  @ApiOperation({
    summary: "An organisation's credit ledger, newest first, a page at a time (member, trusted JWT or service key)",
    description:
      "Every movement of its grants: grant (+), consume, expire and void (−), and release (+: a reservation's hold given back, no " +
      'grant). For every grant, its amount minus its consume, expire and void entries is its remaining. Pass the last id as ' +
      'starting_after for the next page.',
  })
  @ApiOkResponse({ type: LedgerPage })
  @ApiErrors(400, 401, 403, 404)
  ledger(@QueryVerifiedCaller() caller: QueryCaller, @Query() query: LedgerQuery): Promise<LedgerPage> {
    return this.reads.ledger(query.organisation_id, caller, query);
  }
}
