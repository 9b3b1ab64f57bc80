import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { transaction } from '../database/transaction';
import { NotificationDeliveriesRepository } from './notification-deliveries.repository';
import { LicenseChanges } from '../subscriptions/license-changes.port';
import { NotificationType } from './notification-message.entity';
import { NotificationsRepository } from './notifications.repository';

/**
 * Decides the outbound notifications (spec §10) inside the transaction of each change: a license that may
 * have changed (webhook events, replays, reconciliation corrections, subscription changes and overrides,
 * through the LicenseChanges port, and a grace period running out) and, through notifications.capacity_crossed,
 * which licensing's usage write calls, a metric crossing its limit. With NOTIFY_URLS
 * unset it does nothing at all (no rows, no cost); see docs/integrating.md (notifications) for what the first change after
 * configuring it is compared with.
 */
@Injectable()
export class NotificationsService implements LicenseChanges {
  private readonly logger = new Logger('Notifications');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
    private readonly states: NotificationsRepository,
    private readonly deliveries: NotificationDeliveriesRepository,
  ) {}

  get enabled(): boolean {
    return this.config.notifyUrls.length > 0;
  }

  /**
   * In the caller's transaction: when the organisation's license (tier, is_active, is_expired, features,
   * limits in force, seats) differs
   * from the one last notified, writes a `license.updated` message. Two round trips; answers the new
   * version, or undefined when nothing changed.
   */
  async licenseMayHaveChanged(manager: EntityManager, organisationId: string): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    await this.states.lockState(manager, organisationId);
    return this.states.writeLicenseChange(manager, organisationId);
  }

  /**
   * In the caller's transaction: a `trial.ending` message (spec §11.5) for the organisation's trial that
   * ends at `trialEnd`. Answers its version, or undefined when notifications are off.
   */
  async trialEnding(
    manager: EntityManager,
    organisationId: string,
    trial: { tier: string; trialEnd: number; hasPaymentMethod: boolean },
  ): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    await this.states.lockState(manager, organisationId);
    return this.states.writeTrialEnding(manager, organisationId, trial);
  }

  /**
   * In the caller's transaction: a message of `type` (one of the credits and usage alerts, spec §16.4) whose data is
   * the license last notified and `data`, with the organisation's next version. Undefined when notifications are off.
   */
  async notice(manager: EntityManager, organisationId: string, type: NotificationType, data: Record<string, unknown>): Promise<number | undefined> {
    if (!this.enabled) return undefined;
    return this.states.writeNotice(manager, organisationId, type, data);
  }

  /** Run once a minute (on one instance): grace and override expiries, lost jobs, old messages. Each step on its own. */
  async minutely(): Promise<void> {
    for (const [what, step] of [
      ['grace expiry', () => this.graceExpiries()],
      ['override expiry', () => this.overrideExpiries()],
      ['lost-job sweep', () => this.deliveries.requeueLost()],
      ['pruning', () => this.states.pruneMessages()],
    ] as const) {
      await step().catch((err: Error) => this.logger.error({ msg: `notifications: ${what} failed; trying again in a minute`, err }));
    }
  }

  /** Notifies the licenses whose grace period ran out since they were last compared; answers how many changed. */
  async graceExpiries(): Promise<number> {
    return this.enabled ? this.compareAgain(await this.states.graceExpired()) : 0;
  }

  /**
   * Notifies the organisations whose override expired since they were last compared (within a minute of
   * `expires_at`: the expiry itself needs no job); answers how many changed.
   */
  async overrideExpiries(): Promise<number> {
    return this.enabled ? this.compareAgain(await this.states.overridesExpired()) : 0;
  }

  /** Compares each organisation's license with the one last notified, each in its transaction; answers how many changed. */
  private async compareAgain(organisations: string[]): Promise<number> {
    let changed = 0;
    for (const org of organisations) {
      const version = await transaction(this.db, async (m) => {
        const v = await this.licenseMayHaveChanged(m, org);
        // Compared now: looked at again only after a later expiry (another subscription may keep it active).
        await this.states.markChecked(m, org);
        return v;
      });
      if (version !== undefined) changed++;
    }
    return changed;
  }
}
