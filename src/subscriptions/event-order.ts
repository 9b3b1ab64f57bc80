import { EVENT_TYPES } from '../provider/provider-event';

/**
 * The order in which the provider's events apply to one subscription (spec §6): by `created`, then by a rank
 * among events of the same second. Every path that applies or replays events orders them here: a subscription
 * event older than the last one applied is stale, and the webhook's waiting events and the reconciliation's
 * set-aside ones are applied oldest first by the same key.
 */
export interface EventPosition {
  /** The event's `created` (Unix seconds). */
  created: number;
  rank: number;
}

/** Subscription events of one second: created 1 < updated 2 < deleted 3. */
export const EVENT_RANK: Readonly<Record<string, number>> = {
  [EVENT_TYPES.subscriptionCreated]: 1,
  [EVENT_TYPES.subscriptionUpdated]: 2,
  [EVENT_TYPES.subscriptionDeleted]: 3,
};

/**
 * Schedule events are ordered among themselves the same way: `.updated` 1 < the events that end a schedule 2.
 * What the provider says a schedule is now (its answer to a change made here, the reconciliation's reading) is
 * applied with the ending rank: no schedule event of the same second can undo it.
 */
export const SCHEDULE_ENDED_RANK = 2;
export const SCHEDULE_EVENT_RANK: Readonly<Record<string, number>> = {
  [EVENT_TYPES.scheduleUpdated]: 1,
  [EVENT_TYPES.scheduleReleased]: SCHEDULE_ENDED_RANK,
  [EVENT_TYPES.scheduleCanceled]: SCHEDULE_ENDED_RANK,
  [EVENT_TYPES.scheduleCompleted]: SCHEDULE_ENDED_RANK,
};

/** Whether `event` comes before `last` in this order. */
export function isOlder(event: EventPosition, last: EventPosition): boolean {
  return event.created < last.created || (event.created === last.created && event.rank < last.rank);
}
