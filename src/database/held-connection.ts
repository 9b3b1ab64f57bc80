import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Which async contexts are inside a transaction's work while it holds its connection (`transaction.ts`).
 * There, a request to the pool for another connection breaks the data layer's rule (docs/architecture.md:
 * inside a transaction every query goes through its manager): under a burst every connection can be held by
 * a transaction waiting for a second one, and each request then waits out the acquire timeout (503).
 */
const holding = new AsyncLocalStorage<{ held: boolean }>();

/** Runs a transaction's `work`, marked as holding its connection until `work` has settled. */
export async function whileHolding<T>(work: () => Promise<T>): Promise<T> {
  const state = { held: true };
  try {
    return await holding.run(state, work);
  } finally {
    // Anything `work` left running (never awaited) no longer waits inside the transaction.
    state.held = false;
  }
}

/** Whether the caller runs inside a transaction's work while it holds its connection. */
export function holdsTransactionConnection(): boolean {
  return holding.getStore()?.held === true;
}

export class SecondConnectionRefused extends Error {
  constructor() {
    super(
      'a transaction asked the pool for a second connection: inside transaction(), every query goes through ' +
        "the transaction's EntityManager, never the DataSource (docs/architecture.md, the data layer)",
    );
    this.name = 'SecondConnectionRefused';
  }
}
