import { Body, Controller, Delete, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/api-docs';
import { ServiceKey } from '../common/route-auth.decorators';
import { UsageResponse } from '../licensing/licensing.dto';
import { CommitBody, ReleaseQuery, ReservationBody, ReservationParams, ReservationRecord } from './credits-routes.dto';
import { ReservationsService } from './reservations.service';

/**
 * Reservations (spec §16.5): a trusted back-end holds the most a piece of work may spend, runs it, then commits what
 * it spent (or releases the hold). `X-Service-Key`, as the usage reports.
 */
@ApiTags('licensing')
@ServiceKey()
@Controller('api/licensing/usage/reservations')
export class ReservationsController {
  constructor(private readonly reservations: ReservationsService) {}

  @Post()
  @ApiOperation({
    summary: 'Hold an amount of a metric before the work that spends it (201); refused whole (402) when what the metric allows cannot cover it',
    description:
      'The hold is checked exactly as a report of its amount would be (block: the limit; credits: the included amount left plus the ' +
      'balance; bill: always) and counts against every report, check and reservation of the organisation and metric until it is ' +
      'committed, released or expires_at passes (no job needed). The same idempotency_key again answers the same reservation.',
  })
  @ApiCreatedResponse({ type: ReservationRecord })
  @ApiErrors(400, 401, 402, 403, 404, 409)
  reserve(@Body() body: ReservationBody): Promise<ReservationRecord> {
    return this.reservations.reserve({
      organisationId: body.organisation_id,
      metric: body.metric,
      amount: body.amount,
      ttlS: body.ttl_s,
      idempotencyKey: body.idempotency_key,
    });
  }

  @Post(':id/commit')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Report what the work spent (0 to the reserved amount) and release the rest; a repeated commit counts once and answers the same',
    description:
      'The amount is one usage report keyed by the reservation id, answered as a report is. After expires_at the hold is gone: the ' +
      'commit is an ordinary report of the amount (accepted when it fits, else 402), answered with "expired": true. More than ' +
      'reserved: 400 reservation_exceeded; after a release: 409 reservation_released; a repeat with another amount: 409 reservation_committed.',
  })
  @ApiOkResponse({ type: UsageResponse })
  @ApiErrors(400, 401, 402, 403, 404, 409)
  commit(@Param() params: ReservationParams, @Body() body: CommitBody): Promise<UsageResponse> {
    return this.reservations.commit(params.id, body.amount, body.organisation_id);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Release a reservation: nothing spent, the hold given back (again: 204; after a commit: 409 reservation_committed)' })
  @ApiNoContentResponse({ description: 'Released' })
  @ApiErrors(400, 401, 403, 404, 409)
  async release(@Param() params: ReservationParams, @Query() query: ReleaseQuery): Promise<void> {
    await this.reservations.release(params.id, query.organisation_id);
  }
}
