import { Global, Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { IdentityService } from './identity.service';
import { MeController } from './me.controller';
import { SessionService } from './session.service';
import { SessionStrategy } from './session.strategy';

/** Organisations, users, memberships and sessions; every business module checks access through it. */
@Global()
@Module({
  imports: [PassportModule],
  controllers: [MeController],
  providers: [IdentityService, SessionService, SessionStrategy],
  exports: [IdentityService, SessionService, SessionStrategy],
})
export class IdentityModule {}
