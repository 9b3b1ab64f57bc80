import { ApiProperty } from '@nestjs/swagger';
import { NOTIFICATION_TYPES } from './notification-message.entity';

// What the service POSTs to each of NOTIFY_URLS (spec §10), described for the API document's `webhooks`
// (src/ops/openapi.ts) and so for the client's types. The bodies themselves are built in SQL
// (notification.sql.ts); these classes only describe them.

export class LicenseNotificationData {
  @ApiProperty({ format: 'uuid' }) organisation_id: string;
  @ApiProperty({ type: 'string', nullable: true, description: "The web app's own id of the organisation" }) external_id: string | null;
  @ApiProperty({ example: 'pro' }) tier: string;
  @ApiProperty() is_active: boolean;
  @ApiProperty() is_expired: boolean;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'Grows by one with every change of the organisation: drop a message older than one applied' })
  version: number;
}

export class LicenseUpdatedNotificationData extends LicenseNotificationData {
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'boolean' },
    example: { api_access: true, audit_log: false, sso: true },
    description: 'Every feature in force (overrides included), as the entitlements read answers them',
  })
  features: Record<string, boolean>;
  @ApiProperty({ type: 'integer', nullable: true, description: "The subscription's seats; null for a tier not sold per seat" })
  seats: number | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: "The plan version of the tier the license comes from (spec §17): the subscription's, kept until it is migrated; the free tier's newest",
  })
  plan_version: number | null;
}

export class UsageCapacityNotificationData extends LicenseNotificationData {
  @ApiProperty({ example: 'projects' }) metric: string;
  @ApiProperty({ type: 'integer', minimum: 0 }) used: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) limit: number;
  @ApiProperty({ description: 'true when the metric reached its limit, false when it went back under it' }) at_capacity: boolean;
}

export class LicenseUpdatedNotification {
  @ApiProperty({ enum: [NOTIFICATION_TYPES[0]] }) type: 'license.updated';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: LicenseUpdatedNotificationData }) data: LicenseUpdatedNotificationData;
}

export class UsageCapacityNotification {
  @ApiProperty({ enum: [NOTIFICATION_TYPES[1]] }) type: 'usage.capacity';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: UsageCapacityNotificationData }) data: UsageCapacityNotificationData;
}

export class TrialEndingNotificationData extends LicenseNotificationData {
  @ApiProperty({ type: 'integer', description: 'When the trial ends (Unix seconds)' }) trial_end: number;
  @ApiProperty({ description: 'The subscription has a default payment method: it goes on paid after the trial' })
  has_payment_method: boolean;
}

export class TrialEndingNotification {
  @ApiProperty({ enum: [NOTIFICATION_TYPES[2]] }) type: 'trial.ending';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: TrialEndingNotificationData }) data: TrialEndingNotificationData;
}

export class UsageThresholdNotificationData extends LicenseNotificationData {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ type: 'integer', minimum: 1, example: 80, description: 'The percentage of the included limit reached (one of USAGE_ALERT_THRESHOLDS)' })
  threshold: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) used: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The included limit in force' }) limit: number;
  @ApiProperty({ type: 'integer', description: 'The start of the period it counts in (Unix seconds); sent once per period and threshold' }) period_start: number;
}

export class UsageThresholdNotification {
  @ApiProperty({ enum: ['usage.threshold'] }) type: 'usage.threshold';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: UsageThresholdNotificationData }) data: UsageThresholdNotificationData;
}

export class CreditsLowNotificationData extends LicenseNotificationData {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ type: 'integer', description: 'Included remaining + balance − reserved, after the report that crossed' }) available: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: "What it fell below: the automatic top-up's threshold, else CREDITS_LOW_THRESHOLD_PCT of the included limit",
  })
  threshold: number;
}

export class CreditsLowNotification {
  @ApiProperty({ enum: ['credits.low'] }) type: 'credits.low';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: CreditsLowNotificationData }) data: CreditsLowNotificationData;
}

export class CreditsGrantedNotificationData extends LicenseNotificationData {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ format: 'uuid' }) grant_id: string;
  @ApiProperty({ type: 'integer', minimum: 1 }) amount: number;
  @ApiProperty({ enum: ['promotional', 'paid'] }) category: 'promotional' | 'paid';
  @ApiProperty({ enum: ['admin', 'top_up', 'auto_recharge', 'rollover'] }) source: 'admin' | 'top_up' | 'auto_recharge' | 'rollover';
  @ApiProperty({ type: 'string', format: 'date-time' }) effective_at: string;
  @ApiProperty({ type: 'string', format: 'date-time', nullable: true }) expires_at: string | null;
  @ApiProperty({ type: 'integer', minimum: 0, description: "The metric's balance (the grants that count) after it" }) balance: number;
}

export class CreditsGrantedNotification {
  @ApiProperty({ enum: ['credits.granted'] }) type: 'credits.granted';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: CreditsGrantedNotificationData }) data: CreditsGrantedNotificationData;
}

export class CreditsRechargeFailedNotificationData extends LicenseNotificationData {
  @ApiProperty({ example: 'ai_tokens' }) metric: string;
  @ApiProperty({ example: 'tokens_1m', description: 'The credit pack that was to be bought' }) pack: string;
  @ApiProperty({ format: 'uuid' }) recharge_id: string;
  @ApiProperty({ description: "Why (the provider's message); the automatic top-up is off until it is saved again" }) error: string;
}

export class CreditsRechargeFailedNotification {
  @ApiProperty({ enum: ['credits.recharge_failed'] }) type: 'credits.recharge_failed';
  @ApiProperty({ format: 'date-time' }) timestamp: string;
  @ApiProperty({ type: CreditsRechargeFailedNotificationData }) data: CreditsRechargeFailedNotificationData;
}

/** The `webhooks` of the API document: one entry per notification type, with its Standard Webhooks headers. */
export const NOTIFICATION_WEBHOOKS = [
  { name: 'license.updated', model: LicenseUpdatedNotification, summary: "An organisation's tier, is_active, is_expired, seats, features, limits in force (an override included) or plan version changed" },
  { name: 'usage.capacity', model: UsageCapacityNotification, summary: 'A metric reached its limit in force, or went back under it' },
  {
    name: 'trial.ending',
    model: TrialEndingNotification,
    summary: "An organisation's trial ends in three days (the provider's customer.subscription.trial_will_end)",
  },
  {
    name: 'usage.threshold',
    model: UsageThresholdNotification,
    summary: "A metric counted per period reached a percentage of its included limit (USAGE_ALERT_THRESHOLDS), once per threshold and period",
  },
  {
    name: 'credits.low',
    model: CreditsLowNotification,
    summary: "A credits metric's available amount fell below its automatic top-up's threshold (or CREDITS_LOW_THRESHOLD_PCT), once each time after being above it",
  },
  { name: 'credits.granted', model: CreditsGrantedNotification, summary: 'Credits were granted: by an operator, a top-up, an automatic top-up or a rollover' },
  {
    name: 'credits.recharge_failed',
    model: CreditsRechargeFailedNotification,
    summary: "An automatic top-up's payment failed; the setting is off until it is saved again",
  },
] as const;
