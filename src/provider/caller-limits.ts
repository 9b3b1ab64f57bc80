import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { TokenBucket } from './token-bucket';

// Users tracked at once; one pushed out starts again with a full bucket, which only ever errs on the lenient side.
const TRACKED_USERS = 10_000;

/**
 * Per-user limits on requests that reach the payment provider (a checkout-session lookup that is not cached, a
 * checkout, a portal): PAYPROVIDER_USER_MAX_PER_MINUTE each, as a burst and then refilled over the minute. So one
 * member cannot spend the provider budget everyone shares. Per instance: behind N instances a user gets up to N
 * times the limit, still a bounded share. Requests the provider never sees (refused before, or cached) are free.
 */
@Injectable()
export class CallerLimits {
  private readonly buckets = new LRUCache<string, TokenBucket>({ max: TRACKED_USERS });
  private readonly perMinute: number;

  constructor(config: AppConfig) {
    this.perMinute = config.providerUserMaxPerMinute;
  }

  /** Counts one provider request for this user, or throws 429 rate_limited with the seconds until the next. */
  take(userId: string): void {
    const now = performance.now();
    let bucket = this.buckets.get(userId);
    if (!bucket) {
      bucket = new TokenBucket(this.perMinute / 60, this.perMinute, now);
      this.buckets.set(userId, bucket);
    }
    if (bucket.tryTake(now)) return;
    const retryAfterS = Math.ceil(bucket.msUntilToken(now) / 1000);
    throw new AppException('rate_limited', `Too many payment requests; try again in ${retryAfterS} s.`, { retryAfterS });
  }
}
