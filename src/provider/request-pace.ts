import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/** The longest `Retry-After` we wait for; a longer one is the provider asking for more than a pause. */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * At most `perSecond` provider requests in any second, as the provider counts them (by arrival). A request
 * may start only when fewer than `perSecond` requests are in flight or ended within the last second: a
 * request arrives between its start and its end, so no second at the provider can hold more, however
 * late the network delivers them. (A limiter that counts starts, like most, allows one more whenever an
 * earlier request arrives late.) A 429's `Retry-After` pauses every request of the pace until then.
 */
export class RequestPace {
  private readonly ended: number[] = [];
  private inFlight = 0;
  private pausedUntil = 0;
  private turn: Promise<void> = Promise.resolve();
  private wake?: () => void;

  constructor(readonly perSecond: number) {}

  /** Waits for a request's turn (first come, first served); `done()` must follow once it has ended. */
  take(): Promise<void> {
    const mine = this.turn.then(() => this.untilFree());
    this.turn = mine;
    return mine;
  }

  done(): void {
    this.inFlight--;
    this.ended.push(performance.now());
    this.wake?.();
  }

  /** The provider said `Retry-After` (seconds or an HTTP date) on a 429. */
  retryAfter(header: string | undefined): void {
    if (!header) return;
    const ms = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - Date.now();
    if (Number.isFinite(ms) && ms > 0) this.pausedUntil = Math.max(this.pausedUntil, performance.now() + Math.min(ms, MAX_RETRY_AFTER_MS));
  }

  private async untilFree(): Promise<void> {
    for (;;) {
      const now = performance.now();
      while (this.ended.length && this.ended[0] <= now - 1000) this.ended.shift();
      const full = this.inFlight + this.ended.length >= this.perSecond;
      // Full with every slot in flight: wait for one to end (done() wakes us).
      const wait = Math.max(this.pausedUntil - now, full ? (this.ended.length ? this.ended[0] + 1000 - now : Infinity) : 0);
      if (wait <= 0) {
        this.inFlight++;
        return;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (wait !== Infinity) setTimeout(resolve, Math.ceil(wait));
      });
      this.wake = undefined;
    }
  }
}

const current = new AsyncLocalStorage<RequestPace>();

/**
 * Runs `work` with every provider request it makes, however deep (the SDK's retries, a handler's fetch),
 * paced by `pace`. The provider adapter reads it for each HTTP request (`requestPace()`).
 */
export function withRequestPace<T>(pace: RequestPace, work: () => Promise<T>): Promise<T> {
  return current.run(pace, work);
}

export function requestPace(): RequestPace | undefined {
  return current.getStore();
}
