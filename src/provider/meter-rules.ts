/*
 * The provider's documented rules for a billing meter event (`POST /v1/billing/meter_events`; sources in
 * docs/payments.md, "Meter events at the provider"), in one place for what plays the provider here: the
 * sandbox, and the tests' strict double.
 */

/** A meter event may be dated at most 35 calendar days back … */
export const METER_EVENT_MAX_AGE_S = 35 * 86_400;
/** … and at most 5 minutes ahead. */
export const METER_EVENT_MAX_AHEAD_S = 5 * 60;
/** The provider refuses an identifier it has seen within (at least) the last 24 hours. */
export const METER_IDENTIFIER_UNIQUE_S = 24 * 3600;

/** Why the provider refuses this timestamp (Unix seconds) at `now`, or undefined. */
export function meterTimestampProblem(timestamp: number, now: number): string | undefined {
  if (timestamp < now - METER_EVENT_MAX_AGE_S) return 'timestamp_too_far_in_past: the timestamp must be within the past 35 calendar days';
  if (timestamp > now + METER_EVENT_MAX_AHEAD_S) return 'timestamp_in_future: the timestamp can be at most 5 minutes in the future';
  return undefined;
}

/** The provider's answer to an identifier it already has (a 400; it is not retried). */
export const duplicateIdentifierMessage = (identifier: string) => `An event already exists with identifier ${identifier}.`;
