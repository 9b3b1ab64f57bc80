import { ServiceError } from '@billing-licensing/client';

/** What a hook answers for one read: the data once it came, whether it is on its way, and the typed error. */
export interface ReadState<T> {
  data: T | undefined;
  /** True while the first answer is awaited (a refetch keeps the data shown and `loading` false). */
  loading: boolean;
  /** The last read's failure, typed (`code`, `status`, the service's `message`, `requestId`); null after a success. */
  error: ServiceError | null;
}

interface Entry {
  state: ReadState<unknown>;
  read: () => Promise<unknown>;
  pending: Promise<void> | undefined;
  /** Read again when next subscribed (refresh() found it without a reader). */
  stale: boolean;
  listeners: Set<() => void>;
}

const LOADING: ReadState<never> = Object.freeze({ data: undefined, loading: true, error: null });

/** Any failure as the client's typed error: the client throws ServiceError; anything else (getToken) is wrapped. */
export function asServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ServiceError(null, { code: 'network_error', message }, { cause: err });
}

/**
 * The provider's cache of reads, keyed by `<organisation>:<read>` (the plan list by `plans`): one request per key
 * at a time, shared by every hook that reads it, kept when the organisation changes and back. Reads only: writes
 * go straight to the client and are never retried here.
 */
export class ReadStore {
  private readonly entries = new Map<string, Entry>();

  snapshot<T>(key: string): ReadState<T> {
    return (this.entries.get(key)?.state as ReadState<T> | undefined) ?? LOADING;
  }

  /** Registers a reader of `key` (reading it when nothing is cached or it went stale); answers the unsubscribe. */
  subscribe(key: string, read: () => Promise<unknown>, listener: () => void): () => void {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { state: LOADING, read, pending: undefined, stale: true, listeners: new Set() };
      this.entries.set(key, entry);
    }
    entry.read = read;
    entry.listeners.add(listener);
    if (entry.stale) void this.load(key);
    const kept = entry;
    return () => kept.listeners.delete(listener);
  }

  /** Reads `key` again now (or joins the read under way); the data shown stays until the answer. */
  load(key: string): Promise<void> {
    const entry = this.entries.get(key);
    if (!entry) return Promise.resolve();
    if (entry.pending) return entry.pending;
    entry.stale = false;
    const pending = entry.read().then(
      (data) => this.set(entry, { data, loading: false, error: null }),
      (err: unknown) => this.set(entry, { data: entry.state.data, loading: false, error: asServiceError(err) }),
    );
    entry.pending = pending.finally(() => {
      entry.pending = undefined;
    });
    return entry.pending;
  }

  /** Reads again every key that starts with `prefix` and has a reader; the others are read when next shown. */
  async refresh(prefix = ''): Promise<void> {
    const reads: Promise<void>[] = [];
    for (const [key, entry] of this.entries) {
      if (!key.startsWith(prefix)) continue;
      if (entry.listeners.size > 0) reads.push(this.load(key));
      else entry.stale = true;
    }
    await Promise.all(reads);
  }

  /** Seeds a read's answer (e.g. one fetched on the server for the first render). */
  seed(key: string, data: unknown): void {
    if (this.entries.has(key)) return;
    this.entries.set(key, { state: { data, loading: false, error: null }, read: () => Promise.resolve(data), pending: undefined, stale: false, listeners: new Set() });
  }

  private set(entry: Entry, state: ReadState<unknown>): void {
    entry.state = state;
    for (const listener of [...entry.listeners]) listener();
  }
}
