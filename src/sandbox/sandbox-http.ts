import { Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { AppConfig } from '../config/app-config';
import { CreditPack } from '../config/credit-packs';
import { paidTiers } from '../config/tiers';
import { SandboxInterval, SandboxPlan } from './provider-events';
import { messagePage } from './sandbox-pages';
import { PortalTier } from './sandbox-portal-page';

/**
 * What the sandbox's page controllers share: whether the pages exist (the sandbox is the provider), how a page or
 * a redirect is answered (the headers that keep the session id in the URL to this site), and the plans on sale.
 */
@Injectable()
export class SandboxHttp {
  constructor(private readonly config: AppConfig) {}

  /** With a real provider configured the sandbox's pages do not exist. */
  enabled(): boolean {
    return this.config.provider === 'sandbox';
  }

  send(res: Response, status: number, html: string): void {
    this.secure(res);
    res.status(status).type('html').send(html);
  }

  redirect(res: Response, url: string): void {
    this.secure(res);
    res.redirect(303, url);
  }

  /** The headers of every sandbox answer: nothing cached, no Referer, only this origin's script. */
  secure(res: Response): void {
    res.setHeader('Cache-Control', 'no-store');
    // The session id in the URL is the credential: never hand it to the next site in a Referer.
    res.setHeader('Referrer-Policy', 'no-referrer');
    // form-action must allow the web app, because browsers apply it to the redirect after a form post.
    res.setHeader(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; form-action 'self' ${this.config.appUrl.origin}; frame-ancestors 'none'; base-uri 'none'`,
    );
  }

  /** A paid tier as the pages offer it: sold per seat or not, and its seat limit. */
  offer(tier: string): PortalTier {
    const plan = this.config.tiers[tier];
    return { tier, perSeat: plan?.perSeat ?? false, maxSeats: plan?.metrics.users.limit ?? 1 };
  }

  /** A credit pack of the tier table (the sandbox's checkout page says what it grants). */
  pack(name: string): CreditPack | undefined {
    return Object.hasOwn(this.config.creditPacks, name) ? this.config.creditPacks[name] : undefined;
  }

  /** Every paid tier, in the tier table's order (which the portal reads as small to big). */
  offers(): PortalTier[] {
    return paidTiers(this.config.tiers).map((t) => this.offer(t));
  }

  /** A plan of a paid tier; seats only count for a per-seat tier (1 to its max), else the quantity is 1. */
  plan(tier: string, interval: SandboxInterval, seats: string | undefined): SandboxPlan | string {
    const { perSeat, maxSeats } = this.offer(tier);
    if (!perSeat) return { tier, interval, quantity: 1 };
    const quantity = Number(seats ?? 1);
    if (!Number.isSafeInteger(quantity) || quantity < 1 || quantity > maxSeats) return `Seats must be a whole number from 1 to ${maxSeats}.`;
    return { tier, interval, quantity };
  }
}

export function notFound(what: string): string {
  return messagePage('Not found', `There is no such ${what}. Start again from the application.`);
}

export function expired(backUrl: string): string {
  return messagePage('Session expired', 'This session has expired. Start again from the application.', { href: backUrl, label: 'Return' });
}
