import { TokenBucket } from './token-bucket';

/**
 * Who goes first when the provider's requests per second run short:
 * - `interactive`: a person is waiting to pay or manage a plan (checkout, portal, expiring a checkout,
 *   subscription changes);
 * - `read`: lookups a person may be waiting on, but that abuse can multiply (checkout-session retrieval,
 *   a subscription fetched for a webhook);
 * - `background`: work that can wait a second (reconciliation listings, meter reporting).
 */
export type ProviderPriority = 'interactive' | 'read' | 'background';
const ORDER: readonly ProviderPriority[] = ['interactive', 'read', 'background'];

/** No request slot came within the wait limit: the budget is spent for now. */
export class ProviderBudgetExhausted extends Error {
  constructor(readonly retryAfterS: number) {
    super(`the payment provider's request budget (PAYPROVIDER_MAX_RPS) is spent; retry in ${retryAfterS} s`);
  }
}

interface Waiter {
  resolve: () => void;
  reject: (err: Error) => void;
  deadline: number;
}

export interface ProviderBudgetOptions {
  /** Requests per second, and the burst: one second's worth. */
  maxRps: number;
  /** How long a request may wait for its slot before it fails (ProviderBudgetExhausted). */
  maxWaitMs: number;
  /** Monotonic milliseconds; tests pass a fake clock. */
  now?: () => number;
}

/**
 * The one request budget in front of the payment provider (PAYPROVIDER_MAX_RPS, per instance): a token bucket
 * whose waiters are served by priority, first come first served within one. A request that cannot get a slot
 * within `maxWaitMs` fails rather than queueing without end.
 */
export class ProviderBudget {
  private readonly bucket: TokenBucket;
  private readonly queues: Record<ProviderPriority, Waiter[]> = { interactive: [], read: [], background: [] };
  private readonly now: () => number;
  private timer?: NodeJS.Timeout;

  constructor(private readonly opts: ProviderBudgetOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.bucket = new TokenBucket(opts.maxRps, opts.maxRps, this.now());
  }

  /** Resolves when this request may go to the provider. */
  take(priority: ProviderPriority): Promise<void> {
    if (!this.waiting() && this.bucket.tryTake(this.now())) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queues[priority].push({ resolve, reject, deadline: this.now() + this.opts.maxWaitMs });
      this.drain();
    });
  }

  /** Requests waiting for a slot, by priority (for tests and metrics). */
  queued(): Record<ProviderPriority, number> {
    return { interactive: this.queues.interactive.length, read: this.queues.read.length, background: this.queues.background.length };
  }

  private waiting(): number {
    return ORDER.reduce((n, p) => n + this.queues[p].length, 0);
  }

  /** Hands out the tokens there are, highest priority first; fails the overdue; wakes up for what is next. */
  private drain(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const now = this.now();
    for (const priority of ORDER) {
      const queue = this.queues[priority];
      while (queue.length && this.bucket.tryTake(now)) queue.shift()!.resolve();
    }
    for (const priority of ORDER) {
      const queue = this.queues[priority];
      const overdue = queue.filter((w) => w.deadline <= now);
      if (!overdue.length) continue;
      this.queues[priority] = queue.filter((w) => w.deadline > now);
      const retryAfterS = Math.max(1, Math.ceil(this.waiting() / this.opts.maxRps));
      for (const w of overdue) w.reject(new ProviderBudgetExhausted(retryAfterS));
    }
    if (!this.waiting()) return;
    const nextDeadline = Math.min(...ORDER.flatMap((p) => this.queues[p].map((w) => w.deadline)));
    const delay = Math.max(1, Math.min(this.bucket.msUntilToken(now), nextDeadline - now));
    this.timer = setTimeout(() => this.drain(), delay);
    // A process with nothing else to do does not stay alive for a queue: its callers are gone too.
    this.timer.unref();
  }
}
