import { Injectable } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { LRUCache } from 'lru-cache';
import { AppException, notAMember } from '../common/app-exception';
import { AuthUser } from '../common/current-user.decorator';
import { IdentityService } from '../identity/identity.service';
import { CallerLimits } from '../provider/caller-limits';
import { CHECKOUT_SESSION_ID_MAX_LENGTH, CheckoutSessionInfo, PaymentProvider, PaymentProviderError } from '../provider/payment-provider.port';
import { providerFailure } from '../provider/provider-failure';
import { CheckoutSessionResult } from './checkout-session.dto';
import { packPurchaseOf } from './credit-purchases';

// Checked before the provider is called, so a crafted id (`../customers/cus_1`) never reaches its API.
export const SESSION_ID = /^cs_[A-Za-z0-9_]{1,250}$/;
const COMPLETED = ['paid', 'no_payment_required'];
const sessionNotFound = () => new AppException('session_not_found', 'The payment provider knows no checkout session with this id.');
// Completed sessions kept per instance (a few hundred bytes each).
const CACHED_SESSIONS = 5_000;

/**
 * GET /api/billing/session: what a completed checkout bought, for a member of the buying organisation. A
 * session that is complete and paid never changes at the provider again, so it is kept (per instance) and the
 * page a buyer reloads costs no provider request; anything else (open, expired, an asynchronous payment still
 * unpaid) is asked again each time. Access is checked on every request, cached or not.
 */
@Injectable()
export class CheckoutReportService {
  private readonly completed = new LRUCache<string, CheckoutSessionInfo>({ max: CACHED_SESSIONS });

  constructor(
    private readonly provider: PaymentProvider,
    private readonly identity: IdentityService,
    private readonly callerLimits: CallerLimits,
  ) {}

  async report(caller: AuthUser, sessionId: unknown): Promise<CheckoutSessionResult> {
    if (sessionId === undefined || sessionId === '') {
      throw new AppException('session_id_required', 'The query parameter session_id is required.');
    }
    if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId)) {
      throw new AppException('invalid_session_id', 'session_id must look like cs_… (letters, digits, _).');
    }
    // Longer than any id of the provider's, which would refuse it: no such session, and no request spent on it.
    if (sessionId.length > CHECKOUT_SESSION_ID_MAX_LENGTH) throw sessionNotFound();
    const session = this.completed.get(sessionId) ?? (await this.retrieve(caller, sessionId));
    // Access before payment state: a stranger learns nothing about someone else's checkout.
    await this.requireBuyer(caller, session);
    if (!COMPLETED.includes(session.paymentStatus)) {
      throw new AppException('payment_not_completed', 'The payment of this checkout session is not completed.');
    }
    const result: CheckoutSessionResult = {
      session_id: session.id,
      amount_total: session.amountTotal ?? 0,
      currency: (session.currency ?? '').toUpperCase(),
      tier: session.metadata.tier ?? null,
      created: session.created,
    };
    // A credit pack's session (spec §16.3) says what it bought; a subscription's keeps the seed's five fields.
    const pack = packPurchaseOf(session.metadata);
    return pack ? { ...result, tier: null, pack: pack.pack, quantity: pack.quantity } : result;
  }

  private async retrieve(caller: AuthUser, sessionId: string): Promise<CheckoutSessionInfo> {
    this.callerLimits.take(caller.id);
    try {
      const session = await this.provider.retrieveCheckoutSession(sessionId);
      if (session.status === 'complete' && COMPLETED.includes(session.paymentStatus)) this.completed.set(sessionId, session);
      return session;
    } catch (err) {
      if (err instanceof PaymentProviderError && err.kind === 'not_found') throw sessionNotFound();
      throw providerFailure(err);
    }
  }

  /** A checkout session names its organisation in metadata (ours) or client_reference_id; one naming none is nobody's. */
  private async requireBuyer(caller: AuthUser, session: CheckoutSessionInfo): Promise<void> {
    const organisationId = session.metadata.organisation_id || session.clientReferenceId;
    if (!organisationId || !isUUID(organisationId)) throw notAMember();
    await this.identity.requireMember(caller, organisationId);
  }
}
