import { AppException } from '../common/app-exception';

/** A verified provider event. Only the envelope is checked here; each handler reads its own object. */
export interface ProviderEvent {
  id: string;
  type: string;
  created: number;
  livemode: boolean;
  data: { object: Record<string, any> };
}

const invalid = (message: string) => new AppException(400, 'invalid_event', message);

/** Parses the raw (already verified) body. Throws 400 invalid_event when it is not an event. */
export function parseEvent(rawBody: Buffer): ProviderEvent {
  let body: any;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw invalid('The body is not valid JSON.');
  }
  if (!isObject(body)) throw invalid('The event must be a JSON object.');
  if (typeof body.id !== 'string' || !/^\S{1,255}$/.test(body.id)) throw invalid('The event has no valid id.');
  if (typeof body.type !== 'string' || !/^[\w.-]{1,255}$/.test(body.type)) throw invalid('The event has no valid type.');
  if (!isObject(body.data) || !isObject(body.data.object)) throw invalid('The event has no data.object.');
  // Ordering relies on `created`; the provider always sends it.
  if (!Number.isSafeInteger(body.created) || body.created < 0) throw invalid('The event has no valid created.');
  return { ...body, livemode: body.livemode === true } as ProviderEvent;
}

export function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An id field that the provider may send as a string or, when expanded, as an object with `id`. */
export function idOf(value: unknown): string | undefined {
  if (typeof value === 'string' && value) return value;
  if (isObject(value) && typeof value.id === 'string' && value.id) return value.id;
  return undefined;
}

/** A Unix-seconds field, or undefined when absent or not an integer. */
export function secondsOf(value: unknown): number | undefined {
  return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : undefined;
}

/** Precedence of subscription events with equal `created`. */
export const EVENT_RANK: Record<string, number> = {
  'customer.subscription.created': 1,
  'customer.subscription.updated': 2,
  'customer.subscription.deleted': 3,
};
