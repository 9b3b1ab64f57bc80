import { Global, Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { AdminController } from './admin.controller';
import { IdentityRepository } from './identity.repository';
import { IdentityService } from './identity.service';
import { ProvisioningService } from './provisioning.service';
import { JwtStrategy } from './jwt.strategy';
import { MeController } from './me.controller';
import { ServiceKeys } from './service-keys';
import { SessionRepository } from './session.repository';
import { SessionService } from './session.service';
import { SessionStrategy } from './session.strategy';

/**
 * Organisations, users, memberships and sessions; every business module checks access through it.
 * Licensing tells it the users limit in force (MemberLimitPolicy, a port bound by the root module) before a
 * member is added.
 */
@Global()
@Module({
  imports: [PassportModule],
  controllers: [MeController, AdminController],
  providers: [IdentityRepository, IdentityService, ProvisioningService, SessionRepository, SessionService, SessionStrategy, JwtStrategy, ServiceKeys],
  exports: [IdentityService, ProvisioningService, SessionService, SessionStrategy, JwtStrategy, ServiceKeys],
})
export class IdentityModule {}
