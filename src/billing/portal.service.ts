import { Injectable, Logger } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { AppConfig } from '../config/app-config';
import { IdentityService } from '../identity/identity.service';
import { CallerLimits } from '../provider/caller-limits';
import { PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { PortalSessionResponse } from './portal.dto';
import { providerFailure } from '../provider/provider-failure';

/** GET /api/billing/portal: a provider-hosted page where an owner or admin manages the subscription. */
@Injectable()
export class PortalService {
  private readonly logger = new Logger('Portal');

  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly config: AppConfig,
    private readonly callerLimits: CallerLimits,
  ) {}

  async open(caller: AuthUser, organisationId?: string): Promise<PortalSessionResponse> {
    const orgId = organisationId ?? (await this.onlyOrganisationOf(caller.id));
    await this.identity.requireMember(caller, orgId);
    const customerId = await this.identity.customerOf(orgId);
    if (!customerId) throw noCustomer();
    this.callerLimits.take(caller.id);
    try {
      return await this.provider.createPortalSession(customerId, new URL('/billing', this.config.appUrl).href);
    } catch (err) {
      // The provider no longer knows the customer (deleted there, or a test-mode id after switching to a live
      // key): for us that is no customer record either. The next checkout creates a new one.
      if (err instanceof PaymentProviderError && err.kind === 'not_found') {
        this.logger.warn({ msg: 'the payment provider does not know the stored customer', organisationId: orgId, customerId });
        throw noCustomer();
      }
      throw providerFailure(err);
    }
  }

  /** The seed's portal takes no parameter: that works while the caller belongs to exactly one organisation. */
  private async onlyOrganisationOf(userId: string): Promise<string> {
    const memberships = await this.identity.membershipsOf(userId);
    if (memberships.length !== 1) {
      throw new AppException('organisation_id_required',
        'You belong to several organisations (or none): name one with organisation_id.',
      );
    }
    return memberships[0].organisation_id;
  }
}

const noCustomer = () =>
  new AppException('no_customer', 'This organisation has no customer record with the payment provider yet.');
