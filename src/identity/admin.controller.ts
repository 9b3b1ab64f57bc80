import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor } from '../audit/audit-actor.decorator';
import type { AuditActor } from '../audit/audit.service';
import { ApiErrors } from '../common/api-docs';
import { AppException } from '../common/app-exception';
import { ServiceKey } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';
import {
  CreateOrganisationDto,
  CreateSessionDto,
  CreateUserDto,
  ExternalIdQuery,
  IdParams,
  MemberParams,
  MembershipRecord,
  OrganisationRecord,
  PutMemberDto,
  RevokeSessionsDto,
  SessionCreated,
  SessionsRevoked,
  UserRecord,
} from './admin.dto';
import { IdentityService, organisationNotFound } from './identity.service';
import { ProvisioningService } from './provisioning.service';

const userNotFound = (what: string) => new AppException('user_not_found', `No user with ${what}.`);

/**
 * The provisioning API (spec §3) for the web app's back end: organisations, users, memberships and
 * sessions over HTTP, with `X-Service-Key` (a user's session is refused, 403). Creates are idempotent by
 * `external_id`: 201 when created, 200 with the existing record when that external_id exists.
 */
@ApiTags('provisioning')
@ServiceKey()
@Controller('api/admin')
export class AdminController {
  constructor(
    private readonly identity: IdentityService,
    private readonly provisioning: ProvisioningService,
    private readonly config: AppConfig,
  ) {}

  @Post('organisations')
  @ApiOperation({ summary: 'Create an organisation (201), or answer the one with this external_id (200)' })
  @ApiCreatedResponse({ type: OrganisationRecord })
  @ApiOkResponse({ type: OrganisationRecord, description: 'An organisation with this external_id already exists' })
  @ApiErrors(400, 401, 403)
  async createOrganisation(
    @Actor() by: AuditActor,
    @Body() dto: CreateOrganisationDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrganisationRecord> {
    const { record, created } = await this.provisioning.createOrganisation(by, dto.name.trim(), dto.external_id);
    res.status(created ? 201 : 200);
    return record;
  }

  @Get('organisations')
  @ApiOperation({ summary: 'The organisation with this external_id' })
  @ApiOkResponse({ type: OrganisationRecord })
  @ApiErrors(400, 401, 403, 404)
  async organisationByExternalId(@Query() query: ExternalIdQuery): Promise<OrganisationRecord> {
    const found = await this.identity.findOrganisation({ externalId: query.external_id });
    if (!found) throw new AppException('organisation_not_found', `No organisation with external_id ${query.external_id}.`);
    return found;
  }

  @Get('organisations/:id')
  @ApiOperation({ summary: 'An organisation, as the create answers it' })
  @ApiOkResponse({ type: OrganisationRecord })
  @ApiErrors(400, 401, 403, 404)
  async organisation(@Param() params: IdParams): Promise<OrganisationRecord> {
    const found = await this.identity.findOrganisation({ id: params.id });
    if (!found) throw organisationNotFound(params.id);
    return found;
  }

  @Put('organisations/:id/members/:user_id')
  @HttpCode(200)
  @ApiOperation({
    summary: "Add a member or change a member's role",
    description:
      'A new member beyond the users limit of the tier in force → 402 limit_exceeded, nothing written. ' +
      'Demoting the last owner → 409 last_owner.',
  })
  @ApiOkResponse({ type: MembershipRecord })
  @ApiErrors(400, 401, 402, 403, 404, 409)
  putMember(@Actor() by: AuditActor, @Param() params: MemberParams, @Body() dto: PutMemberDto): Promise<MembershipRecord> {
    return this.provisioning.putMember(by, params.id, params.user_id, dto.role);
  }

  @Delete('organisations/:id/members/:user_id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a member (never the last owner: 409 last_owner)' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiErrors(400, 401, 403, 404, 409)
  async deleteMember(@Actor() by: AuditActor, @Param() params: MemberParams): Promise<void> {
    await this.provisioning.removeMember(by, params.id, params.user_id);
  }

  @Post('users')
  @ApiOperation({
    summary: 'Create a user (201), or answer the one with this external_id (200)',
    description: 'An email already used by another user → 409 email_taken.',
  })
  @ApiCreatedResponse({ type: UserRecord })
  @ApiOkResponse({ type: UserRecord, description: 'A user with this external_id already exists' })
  @ApiErrors(400, 401, 403, 409)
  async createUser(@Actor() by: AuditActor, @Body() dto: CreateUserDto, @Res({ passthrough: true }) res: Response): Promise<UserRecord> {
    const { record, created } = await this.provisioning.createUser(by, dto.email, dto.external_id);
    res.status(created ? 201 : 200);
    return record;
  }

  @Get('users')
  @ApiOperation({ summary: 'The user with this external_id' })
  @ApiOkResponse({ type: UserRecord })
  @ApiErrors(400, 401, 403, 404)
  async userByExternalId(@Query() query: ExternalIdQuery): Promise<UserRecord> {
    const found = await this.identity.findUser({ externalId: query.external_id });
    if (!found) throw userNotFound(`external_id ${query.external_id}`);
    return found;
  }

  @Get('users/:id')
  @ApiOperation({ summary: 'A user, as the create answers it' })
  @ApiOkResponse({ type: UserRecord })
  @ApiErrors(400, 401, 403, 404)
  async user(@Param() params: IdParams): Promise<UserRecord> {
    const found = await this.identity.findUser({ id: params.id });
    if (!found) throw userNotFound(`id ${params.id}`);
    return found;
  }

  @Post('sessions')
  @ApiOperation({ summary: 'Mint a session for a user (their web app login): a bearer token or the `session` cookie' })
  @ApiCreatedResponse({ type: SessionCreated })
  @ApiErrors(400, 401, 403, 404)
  async createSession(@Actor() by: AuditActor, @Body() dto: CreateSessionDto): Promise<SessionCreated> {
    const ttl = dto.ttl_s ?? this.config.sessionTtlS;
    if (ttl > this.config.sessionTtlS) {
      throw new AppException('validation_failed', `ttl_s must not be greater than SESSION_TTL_S (${this.config.sessionTtlS})`);
    }
    if (!(await this.identity.userExists(dto.user_id))) throw userNotFound(`id ${dto.user_id}`);
    const { token, expiresAt } = await this.provisioning.createSession(by, dto.user_id, ttl);
    return { token, expires_at: expiresAt.toISOString() };
  }

  @Post('sessions/revoke')
  @HttpCode(200)
  @ApiOperation({ summary: "Revoke one session (`{token}`) or all of a user's sessions (`{user_id}`)" })
  @ApiOkResponse({ type: SessionsRevoked })
  @ApiErrors(400, 401, 403, 404)
  async revokeSessions(@Actor() by: AuditActor, @Body() dto: RevokeSessionsDto): Promise<SessionsRevoked> {
    if ((dto.token === undefined) === (dto.user_id === undefined)) {
      throw new AppException('validation_failed', 'give exactly one of token and user_id');
    }
    if (dto.token !== undefined) return { revoked: await this.provisioning.revokeSession(by, dto.token) };
    if (!(await this.identity.userExists(dto.user_id!))) throw userNotFound(`id ${dto.user_id}`);
    return { revoked: await this.provisioning.revokeSessionsOf(by, dto.user_id!) };
  }
}
