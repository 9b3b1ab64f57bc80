/**
 * A token bucket: holds at most `capacity` tokens and gains `ratePerS` a second. The provider budget and the
 * per-user limits both count with it. `now` is in milliseconds from a monotonic clock (performance.now()).
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly ratePerS: number,
    private readonly capacity: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.at = now;
  }

  /** Takes a token if there is one. */
  tryTake(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until a token is there (0 when one is). */
  msUntilToken(now: number): number {
    this.refill(now);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.ratePerS);
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.at) / 1000) * this.ratePerS);
    this.at = now;
  }
}
