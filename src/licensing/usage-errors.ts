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
 * A concurrent writer took an idempotency key, settled a reservation or created a counter after the usage statement
 * looked: the statement failed whole (nothing of it applied) and runs again.
 */
export class UsageContended extends Error {
  constructor() {
    super('usage write: still contended by concurrent writers after running it again');
  }
}
