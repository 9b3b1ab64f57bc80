import { AppException } from '../common/app-exception';
import type { UsageAnswer } from './usage.repository';

/** A 402: the counter and the limit it was refused against travel with it (a batch result shows them). */
export class LimitExceeded extends AppException {
  constructor(
    code: 'limit_exceeded' | 'insufficient_credits',
    readonly counter: UsageAnswer,
    message: string,
  ) {
    super(code, message);
  }
}

/**
 * An idempotency key was taken (or a counter created) by a concurrent writer mid-statement: the usage write rolls
 * its transaction back and runs again.
 */
export class KeyTaken extends Error {}
