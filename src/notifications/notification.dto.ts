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

/** The `webhooks` of the API document: one entry per notification type, with its Standard Webhooks headers. */
export const NOTIFICATION_WEBHOOKS = [
  { name: 'license.updated', model: LicenseUpdatedNotification, summary: "An organisation's tier, is_active, is_expired, seats, features or limits in force changed (an override included)" },
  { name: 'usage.capacity', model: UsageCapacityNotification, summary: 'A metric reached its limit in force, or went back under it' },
  {
    name: 'trial.ending',
    model: TrialEndingNotification,
    summary: "An organisation's trial ends in three days (the provider's customer.subscription.trial_will_end)",
  },
] as const;
