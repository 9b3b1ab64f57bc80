import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { CreditPack } from '../config/credit-packs';
import { CreditsService } from '../credits/credits.service';
import { CreditGrantRecord } from '../credits/credits.dto';

const DAY_MS = 86_400_000;

/** What a paid purchase granted: the grant, and whether this call made it (false: an earlier event or sync did). */
export type TopUpGrant = { grant: CreditGrantRecord; created: boolean };

/**
 * What a paid credit purchase grants (spec §16.3, §16.4), in the transaction of the event (or reconciliation) that
 * says it is paid: a pack's checkout session its `amount × quantity` (`source: "top_up"`, reference the session),
 * an automatic top-up's invoice one pack (`source: "auto_recharge"`, reference the invoice, through the recharge's
 * settlement). Each exactly once, whatever the number, order or source of the events: CreditsService.grant makes one
 * grant per (organisation, source, reference).
 */
@Injectable()
export class CreditTopUpsService {
  constructor(
    private readonly credits: CreditsService,
    private readonly config: AppConfig,
  ) {}

  /** The pack of the tier table, or undefined when the table sells no such pack (any more). */
  pack(name: string): CreditPack | undefined {
    return Object.hasOwn(this.config.creditPacks, name) ? this.config.creditPacks[name] : undefined;
  }

  /** A paid pack checkout's grant; undefined when the pack is not in the tier table. */
  async grantPaidSession(
    manager: EntityManager,
    p: { organisationId: string; sessionId: string; pack: string; quantity: number },
  ): Promise<TopUpGrant | undefined> {
    const pack = this.pack(p.pack);
    if (!pack) return undefined;
    return this.credits.grant(manager, {
      organisationId: p.organisationId,
      metric: pack.metric,
      amount: pack.amount * p.quantity,
      category: 'paid',
      source: 'top_up',
      reference: p.sessionId,
      expiresAt: expiryOf(pack),
    });
  }

  /**
   * A paid automatic top-up's invoice (spec §16.4): the recharge `paid` and its pack's grant (`auto_recharge`,
   * reference the invoice), once whatever the number of events. Undefined when there is no such recharge or the
   * tier table sells no such pack (any more).
   */
  async grantPaidRecharge(manager: EntityManager, p: { rechargeId: string; invoiceId: string; pack: string }): Promise<TopUpGrant | undefined> {
    const pack = this.pack(p.pack);
    if (!pack) return undefined;
    const settled = await this.credits.settleRecharge(manager, p.rechargeId, { status: 'paid', invoiceId: p.invoiceId, amount: pack.amount, expiresAt: expiryOf(pack) });
    return settled?.grant;
  }
}

/** A pack's credits expire `expires_after_days` after they are granted; never without it. */
function expiryOf(pack: CreditPack): Date | null {
  return pack.expiresAfterDays === null ? null : new Date(Date.now() + pack.expiresAfterDays * DAY_MS);
}
