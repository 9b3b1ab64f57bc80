import { isObject, ProviderEvent } from '../provider/provider-event';
import { AppException } from '../common/app-exception';

const invalid = (message: string) => new AppException('invalid_event', message);

// `\u0000` and lone surrogates can only reach a parsed string through JSON escapes; without one, nothing to clean.
const UNSAFE_ESCAPE = /\\u(0000|d[89a-f])/i;
// eslint-disable-next-line no-control-regex -- NUL is what PostgreSQL refuses
const UNSAFE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Parses a verified body (or a stored one). Throws 400 invalid_event when it is not an event: not a JSON
 * object, or without an id, a type or a data.object (the provider always sends them). Anything else a
 * correctly signed event carries is accepted: strings with `\u0000` or lone surrogates are made safe
 * for PostgreSQL (replaced by U+FFFD), nesting of any depth is left as it is, and `__proto__` keys stay
 * plain own properties (JSON.parse never touches a prototype).
 */
export function parseEvent(raw: Buffer | string): ProviderEvent {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalid('The body is not valid JSON.');
  }
  if (!isObject(body)) throw invalid('The event must be a JSON object.');
  if (UNSAFE_ESCAPE.test(text)) makeStringsSafe(body);
  if (typeof body.id !== 'string' || !/^\S{1,255}$/.test(body.id)) throw invalid('The event has no valid id.');
  if (typeof body.type !== 'string' || !/^[\w.-]{1,255}$/.test(body.type)) throw invalid('The event has no valid type.');
  if (!isObject(body.data) || !isObject(body.data.object)) throw invalid('The event has no data.object.');
  // The provider always sends `created`; an event without a usable one is kept (as -1) and stored failed.
  const created = Number.isSafeInteger(body.created) && body.created >= 0 ? body.created : -1;
  return { ...body, created, livemode: body.livemode === true } as ProviderEvent;
}

/** Replaces NUL and lone surrogates in every string value, iteratively (a deep event must not overflow). */
function makeStringsSafe(root: object): void {
  const pending: object[] = [root];
  while (pending.length) {
    const node = pending.pop()!;
    for (const key of Object.keys(node)) {
      const value = (node as Record<string, unknown>)[key];
      if (typeof value === 'string') {
        const safe = value.replace(UNSAFE, '\uFFFD');
        // defineProperty: plain assignment to a `__proto__` key would set the prototype instead.
        if (safe !== value) Object.defineProperty(node, key, { value: safe, writable: true, enumerable: true, configurable: true });
      } else if (typeof value === 'object' && value !== null) {
        pending.push(value);
      }
    }
  }
}
