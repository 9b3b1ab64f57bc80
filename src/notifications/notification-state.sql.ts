/*
 * The notice states as SQL fragments, for the read statements of other modules that answer in one round
 * trip (the entitlements read reports the notification version). Written only by NotificationsService.
 */
export const notificationStateSql = {
  /** The organisation's notification version (spec §10): that of its last message, 0 before the first. */
  version: (organisation: string) => `COALESCE((SELECT version FROM notification_states WHERE organisation_id = ${organisation}), 0)`,
};
