import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsIn, IsInt, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, Min } from 'class-validator';
import { ROLES, Role } from './membership.entity';

/** The web app's own id (spec §3): 1 to 255 printable characters (no control or invisible format characters). */
const EXTERNAL_ID = /^[^\p{C}]{1,255}$/u;
const externalIdMessage = 'external_id must be 1 to 255 printable characters';

/** Longest lifetime a session may be minted with: SESSION_TTL_S is checked by the service (it is configuration). */
export const MAX_SESSION_TTL_S = 31_536_000;

export class CreateOrganisationDto {
  @ApiProperty({ example: 'Acme Ltd', minLength: 1, maxLength: 200 })
  @IsString()
  @Matches(/\S/, { message: 'name must not be blank' })
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ example: 'org_8231', description: "The web app's own id; creating it again answers the existing record (200)" })
  @IsOptional()
  @IsString()
  @Matches(EXTERNAL_ID, { message: externalIdMessage })
  external_id?: string;
}

export class CreateUserDto {
  @ApiProperty({ example: 'ada@example.com', description: 'Stored lower-case; unique' })
  @IsString()
  @MaxLength(320)
  @IsEmail({}, { message: 'email must be an email address' })
  email: string;

  @ApiPropertyOptional({ example: 'user_77', description: "The web app's own id (a JWT's sub); creating it again answers the existing record (200)" })
  @IsOptional()
  @IsString()
  @Matches(EXTERNAL_ID, { message: externalIdMessage })
  external_id?: string;
}

export class ExternalIdQuery {
  @ApiProperty({ example: 'org_8231' })
  @IsString()
  @Matches(EXTERNAL_ID, { message: externalIdMessage })
  external_id: string;
}

export class IdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  id: string;
}

export class MemberParams extends IdParams {
  @ApiProperty({ format: 'uuid' })
  @IsUUID()
  user_id: string;
}

export class PutMemberDto {
  @ApiProperty({ enum: ROLES, example: 'admin' })
  @IsIn(ROLES)
  role: Role;
}

export class CreateSessionDto {
  @ApiProperty({ format: 'uuid', example: '5b0e7a8c-3f4d-4a51-9c1e-2d6f7b8a9c0d' })
  @IsUUID()
  user_id: string;

  @ApiPropertyOptional({ example: 3600, minimum: 1, description: 'Seconds, 1 to SESSION_TTL_S (default SESSION_TTL_S)' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_SESSION_TTL_S)
  ttl_s?: number;
}

export class RevokeSessionsDto {
  @ApiPropertyOptional({ example: 'q8Xw0c2s3b1m4n5v6c7x8z9a0s1d2f3g4h5j6k7l8p9', description: 'One session, by its token' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  token?: string;

  @ApiPropertyOptional({ format: 'uuid', example: '5b0e7a8c-3f4d-4a51-9c1e-2d6f7b8a9c0d', description: "All of the user's sessions" })
  @IsOptional()
  @IsUUID()
  user_id?: string;
}

export class OrganisationRecord {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ example: 'Acme Ltd' })
  name: string;
  @ApiProperty({ example: 'org_8231', nullable: true, type: String })
  external_id: string | null;
}

export class UserRecord {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ example: 'ada@example.com' })
  email: string;
  @ApiProperty({ example: 'user_77', nullable: true, type: String })
  external_id: string | null;
}

export class MembershipRecord {
  @ApiProperty({ format: 'uuid' })
  organisation_id: string;
  @ApiProperty({ format: 'uuid' })
  user_id: string;
  @ApiProperty({ enum: ROLES })
  role: Role;
}

export class SessionCreated {
  @ApiProperty({ example: 'q8Xw0c2s3b1m4n5v6c7x8z9a0s1d2f3g4h5j6k7l8p9' })
  token: string;
  @ApiProperty({ example: '2026-12-23T10:00:00.000Z' })
  expires_at: string;
}

export class SessionsRevoked {
  @ApiProperty({ example: 1 })
  revoked: number;
}
