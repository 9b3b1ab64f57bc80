import { DatabaseFunction, tableFunction } from '../database/database-function';

/**
 * Notifications' database functions (migration 1764002000000-ModuleFunctions.ts): the notification version other
 * modules' reads report, and the outbox writes. `notifications.capacity_crossed` is how licensing's usage write
 * hands over, in its one statement, the events that moved a metric across its limit. The outbox writes add jobs of
 * the task DELIVERY_TASK (job-queue.ts; the test checks that the function names the same task).
 */
export const NOTIFICATIONS_FUNCTIONS: DatabaseFunction[] = [
  tableFunction('notifications.version', 'org uuid', { version: 'bigint' }),
  {
    name: 'notifications.enqueue',
    arguments: 'org uuid, message_type text, message_version bigint, tier text, is_active boolean, is_expired boolean, extra json, urls text[]',
    returns: 'integer',
    inlined: false,
  },
  { name: 'notifications.notice', arguments: 'org uuid, message_type text, extra json, urls text[]', returns: 'bigint', inlined: false },
  {
    name: 'notifications.capacity_crossed',
    arguments: 'orgs uuid[], metrics text[], used bigint[], limits bigint[], urls text[]',
    returns: 'integer',
    inlined: false,
    genericPlans: true,
  },
  // Several messages of any types in one call, in order (the usage write's spend alerts; migration 1764002510000-SpendAlerts.ts).
  {
    name: 'notifications.notices',
    arguments: 'orgs uuid[], message_types text[], extras json[], urls text[]',
    returns: 'integer',
    inlined: false,
    genericPlans: true,
  },
];
