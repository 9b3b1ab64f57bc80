import { Body, Controller, Delete, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { AuthUser, CurrentUser } from '../common/current-user.decorator';
import { Session } from '../common/route-auth.decorators';
import {
  ChangeSubscriptionDto,
  OrganisationBody,
  PreviewChangeDto,
  PreviewResponse,
  SubscriptionQuery,
  SubscriptionResponse,
} from './subscription.dto';
import { SubscriptionChangesService } from './subscription-changes.service';

const OWNER_OR_ADMIN = { orgRole: ['owner', 'admin'] } as const;

/** The organisation's subscription and its changes (spec §11.4): reads for members, changes for owners and admins. */
@ApiTags('billing')
@Controller('api/billing/subscription')
export class SubscriptionController {
  constructor(private readonly subscriptions: SubscriptionChangesService) {}

  @Get()
  @Session()
  @ApiOperation({ summary: "The organisation's live subscription, or null (any member)" })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors(400, 401, 403)
  read(@CurrentUser() user: AuthUser, @Query() query: SubscriptionQuery): Promise<SubscriptionResponse> {
    return this.subscriptions.read(user, query.organisation_id);
  }

  @Post('preview')
  @HttpCode(200)
  @Session()
  @ApiOperation({
    summary: 'What a change would invoice, from the provider (any member; changes nothing)',
    description: "An upgrade's invoice now, prorated as of `proration_date`; a downgrade's next invoice, at the period's end.",
  })
  @ApiOkResponse({ type: PreviewResponse })
  @ApiErrors(400, 401, 403, 404, 409, 429, 502, 503)
  preview(@CurrentUser() user: AuthUser, @Body() body: PreviewChangeDto): Promise<PreviewResponse> {
    return this.subscriptions.preview(user, body);
  }

  @Post('change')
  @HttpCode(200)
  @Session(OWNER_OR_ADMIN)
  @ApiOperation({
    summary: 'Change the plan, seats or interval (owner or admin)',
    description:
      "An upgrade (a later tier, more seats, a longer interval) takes effect now, prorated and invoiced at once; a downgrade at the period's end, shown as pending_change.",
  })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors(400, 401, 402, 403, 404, 409, 429, 502, 503, 504)
  change(@CurrentUser() user: AuthUser, @Body() body: ChangeSubscriptionDto, @Actor() by: AuditActor): Promise<SubscriptionResponse> {
    return this.subscriptions.change(user, body, by);
  }

  @Delete('pending-change')
  @HttpCode(204)
  @Session(OWNER_OR_ADMIN)
  @ApiOperation({ summary: "Drop the change scheduled for the period's end (owner or admin)" })
  @ApiNoContentResponse({ description: 'Released: the subscription stays as it is' })
  @ApiErrors(400, 401, 403, 404, 409, 429, 502, 503, 504)
  releasePendingChange(@CurrentUser() user: AuthUser, @Query() query: SubscriptionQuery, @Actor() by: AuditActor): Promise<void> {
    return this.subscriptions.releasePendingChange(user, query.organisation_id, by);
  }

  @Post('cancel')
  @HttpCode(200)
  @Session(OWNER_OR_ADMIN)
  @ApiOperation({ summary: "End the subscription with its current period (owner or admin); the paid tier stays until then" })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors(400, 401, 403, 404, 409, 429, 502, 503, 504)
  cancel(@CurrentUser() user: AuthUser, @Body() body: OrganisationBody, @Actor() by: AuditActor): Promise<SubscriptionResponse> {
    return this.subscriptions.cancel(user, body.organisation_id, by);
  }

  @Post('resume')
  @HttpCode(200)
  @Session(OWNER_OR_ADMIN)
  @ApiOperation({ summary: 'Undo a cancellation before the period ends (owner or admin)' })
  @ApiOkResponse({ type: SubscriptionResponse })
  @ApiErrors(400, 401, 403, 404, 409, 429, 502, 503, 504)
  resume(@CurrentUser() user: AuthUser, @Body() body: OrganisationBody, @Actor() by: AuditActor): Promise<SubscriptionResponse> {
    return this.subscriptions.resume(user, body.organisation_id, by);
  }
}
