import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppException } from '../common/app-exception';
import { IdentityService } from '../identity/identity.service';
import { Role } from '../identity/membership.entity';
import { LicensingService, organisationNotFound } from './licensing.service';

/** Adds members within the users limit in force. Every path that adds members should come through here. */
@Injectable()
export class MemberLimitService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly identity: IdentityService,
    private readonly licensing: LicensingService,
  ) {}

  /**
   * The organisation row lock serialises concurrent additions, so two of them cannot both take the
   * last seat. Changing an existing member's role never needs a seat.
   */
  addMember(organisationId: string, userId: string, role: Role) {
    return this.db.transaction(async (m) => {
      const [org] = await m.query(`SELECT 1 FROM organisations WHERE id = $1 FOR UPDATE`, [organisationId]);
      if (!org) throw organisationNotFound(organisationId);
      const [existing] = await m.query(`SELECT 1 FROM memberships WHERE organisation_id = $1 AND user_id = $2`, [
        organisationId,
        userId,
      ]);
      if (!existing) {
        const status = await this.licensing.status(organisationId, null, m);
        const { used, limit } = status.usage.users;
        const { tier, is_active } = status.license;
        if (used >= limit) {
          throw new AppException(
            402,
            'limit_exceeded',
            `Organisation ${organisationId} already has ${used} users, the limit of ${limit} in force ` +
              `(tier ${tier}${is_active ? '' : ', not active: free limits apply'}).`,
          );
        }
      }
      return this.identity.addMember(organisationId, userId, role, m);
    });
  }
}
