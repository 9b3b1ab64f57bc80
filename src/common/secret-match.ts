import { createHash, timingSafeEqual } from 'node:crypto';

const sha256 = (value: string) => createHash('sha256').update(value).digest();

/**
 * The one constant-time check of a presented credential against configured secrets (service keys, the
 * metrics token). Both sides are hashed with SHA-256 first, so timingSafeEqual always compares equal-length
 * buffers and leaks neither content nor length; every secret is compared, without stopping at the first
 * match, so the time does not tell which one matched either. The secrets are hashed once, here.
 * Answers the index of the matching secret, or -1.
 */
export function secretIndex(secrets: readonly string[]): (given: string) => number {
  const hashes = secrets.map(sha256);
  return (given) => {
    const digest = sha256(given);
    return hashes.reduce((found, hash, i) => (timingSafeEqual(digest, hash) && found < 0 ? i : found), -1);
  };
}

/** secretIndex as a yes/no. */
export function secretMatcher(secrets: readonly string[]): (given: string) => boolean {
  const index = secretIndex(secrets);
  return (given) => index(given) >= 0;
}
