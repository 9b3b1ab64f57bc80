/**
 * Polls `probe` every 50 ms until it answers something other than undefined, null or false (a thrown error
 * counts as not yet), and resolves with that; fails naming `what` after `timeoutMs`. The one way the tests
 * wait for a condition: no sleeps, no stopwatch.
 */
export async function waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 20_000): Promise<Exclude<T, undefined | null | false>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve().then(probe).catch(() => undefined);
    if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
