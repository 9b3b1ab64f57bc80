export interface NamedKey {
  name: string;
  key: string;
}

/** `name:key` where the name is a short word; anything else is a bare key (so a key holding a colon needs a name). */
const NAMED_KEY = /^([A-Za-z0-9_.-]{1,64}):(.+)$/s;

/** SERVICE_API_KEYS' entries as names and keys; a bare key is named `key<N>` by its 1-based place in the list. */
export function namedKeys(items: string[]): NamedKey[] {
  return items.map((item, i) => {
    const named = NAMED_KEY.exec(item);
    return named ? { name: named[1], key: named[2] } : { name: `key${i + 1}`, key: item };
  });
}
