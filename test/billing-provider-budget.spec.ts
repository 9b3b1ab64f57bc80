import { ProviderBudget, ProviderBudgetExhausted, ProviderPriority } from '../src/provider/provider-budget';
import { TokenBucket } from '../src/provider/token-bucket';

/** A clock the test moves by hand; the budget's timers are jest's fake ones, so nothing here depends on real time. */
function budget(maxRps: number, maxWaitMs = 10_000) {
  let now = 0;
  const b = new ProviderBudget({ maxRps, maxWaitMs, now: () => now });
  const advance = async (ms: number) => {
    now += ms;
    await jest.advanceTimersByTimeAsync(ms);
  };
  return { b, advance };
}

describe('ProviderBudget (PAYPROVIDER_MAX_RPS)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('lets a burst of one second through at once, then one request per 1/maxRps seconds', async () => {
    const { b, advance } = budget(4);
    const granted: number[] = [];
    for (let i = 0; i < 6; i++) void b.take('read').then(() => granted.push(i));
    await advance(0);
    expect(granted).toEqual([0, 1, 2, 3]);
    await advance(249);
    expect(granted).toHaveLength(4);
    await advance(1);
    expect(granted).toEqual([0, 1, 2, 3, 4]);
    await advance(250);
    expect(granted).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('serves waiting checkouts and portals before reads, and reads before background work, first come first served within one', async () => {
    const { b, advance } = budget(1);
    await b.take('background'); // the only token
    const order: string[] = [];
    const queue: [string, ProviderPriority][] = [
      ['sync-1', 'background'],
      ['lookup-1', 'read'],
      ['sync-2', 'background'],
      ['checkout-1', 'interactive'],
      ['lookup-2', 'read'],
      ['portal-1', 'interactive'],
    ];
    for (const [name, priority] of queue) void b.take(priority).then(() => order.push(name));
    expect(b.queued()).toEqual({ interactive: 2, read: 2, background: 2 });
    for (let i = 0; i < queue.length; i++) await advance(1000);
    expect(order).toEqual(['checkout-1', 'portal-1', 'lookup-1', 'lookup-2', 'sync-1', 'sync-2']);
  });

  it('a checkout arriving behind many waiting reads gets the next slot', async () => {
    const { b, advance } = budget(2);
    await Promise.all([b.take('read'), b.take('read')]);
    const order: string[] = [];
    for (let i = 0; i < 10; i++) void b.take('read').then(() => order.push(`read-${i}`));
    await advance(500);
    void b.take('interactive').then(() => order.push('checkout'));
    await advance(500);
    expect(order).toEqual(['read-0', 'checkout']);
  });

  it('fails a request that found no slot within maxWaitMs, with a Retry-After; the others still get theirs', async () => {
    const { b, advance } = budget(1, 1500);
    await b.take('interactive');
    const outcomes: string[] = [];
    for (const name of ['a', 'b', 'c']) {
      b.take('read').then(
        () => outcomes.push(`${name} ok`),
        (err: unknown) => outcomes.push(`${name} ${err instanceof ProviderBudgetExhausted ? `exhausted ${err.retryAfterS}` : String(err)}`),
      );
    }
    await advance(1000);
    expect(outcomes).toEqual(['a ok']);
    await advance(500);
    expect(outcomes).toEqual(['a ok', 'b exhausted 1', 'c exhausted 1']);
    expect(b.queued()).toEqual({ interactive: 0, read: 0, background: 0 });
    await advance(1000);
    await expect(b.take('read')).resolves.toBeUndefined();
  });
});

describe('TokenBucket', () => {
  it('never holds more than its capacity, and says how long until the next token', () => {
    const bucket = new TokenBucket(0.5, 2, 0);
    expect([bucket.tryTake(0), bucket.tryTake(0), bucket.tryTake(0)]).toEqual([true, true, false]);
    expect(bucket.msUntilToken(0)).toBe(2000);
    expect(bucket.msUntilToken(1500)).toBe(500);
    expect(bucket.tryTake(60_000)).toBe(true);
    expect(bucket.tryTake(60_000)).toBe(true);
    expect(bucket.tryTake(60_000)).toBe(false);
  });
});
