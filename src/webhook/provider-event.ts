import { AppException } from '../common/app-exception';
import { isObject, ProviderEvent } from '../billing/provider-event';

const invalid = (message: string) => new AppException('invalid_event', message);

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
