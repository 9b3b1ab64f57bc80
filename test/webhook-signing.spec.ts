import Stripe from 'stripe';
import { computeSignature } from '../src/provider/provider-signature';
import { parseSignatureHeader, verifySignature } from '../src/webhook/signature';
import { resolveTier } from '../src/subscriptions/tier-resolution';
import { DEFAULT_TIERS } from '../src/config/tiers';
import { signatureHeader } from './support/webhook-signing';
import { subscriptionObject } from './support/provider-events';

const SECRET = 'whsec_unit_secret';
const NOW = 1_750_000_000;

describe('the test signing helper', () => {
  it.each([
    ['{"id":"evt_1","object":"event"}', 1_700_000_000],
    ['{"id":"evt_ü","data":{"object":{"x":"€ \\u2028"}}}', NOW],
    ['', 1],
  ])('produces the same header as the stripe SDK for %j', (payload, timestamp) => {
    const sdk = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp });
    expect(signatureHeader(payload, { secret: SECRET, timestamp })).toBe(sdk);
  });

  it('is accepted by the stripe SDK verifier, and the SDK header by ours', () => {
    const payload = JSON.stringify({ id: 'evt_x', object: 'event' });
    const ours = signatureHeader(payload, { secret: SECRET, timestamp: NOW });
    expect(Stripe.webhooks.signature!.verifyHeader(payload, ours, SECRET, 300, undefined, NOW)).toBe(true);
    const sdk = Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: NOW });
    expect(() =>
      verifySignature({ rawBody: Buffer.from(payload), header: sdk, secrets: [SECRET], toleranceS: 300, nowS: NOW }),
    ).not.toThrow();
  });
});

describe('signature verification (unit)', () => {
  const body = Buffer.from('{"id":"evt_1"}');
  const good = `t=${NOW},v1=${computeSignature(NOW, body, SECRET)}`;
  const verify = (header: string | undefined, opts: { secrets?: string[]; nowS?: number; rawBody?: Buffer } = {}) =>
    verifySignature({ rawBody: opts.rawBody ?? body, header, secrets: opts.secrets ?? [SECRET], toleranceS: 300, nowS: opts.nowS ?? NOW });
  const codeOf = (fn: () => void) => {
    try {
      fn();
      return 'accepted';
    } catch (err) {
      return (err as { code: string }).code;
    }
  };

  it.each<[string, string | undefined, string]>([
    ['valid', good, 'accepted'],
    ['missing', undefined, 'signature_missing'],
    ['empty', '', 'signature_missing'],
    ['garbage', 'nonsense', 'signature_malformed'],
    ['no v1', `t=${NOW},v0=${'a'.repeat(64)}`, 'signature_malformed'],
    ['no t', `v1=${'a'.repeat(64)}`, 'signature_malformed'],
    ['non-numeric t', `t=abc,v1=${'a'.repeat(64)}`, 'signature_malformed'],
    ['repeated t', `t=${NOW},t=${NOW},${good.split(',')[1]}`, 'signature_malformed'],
    ['space after comma', `t=${NOW}, ${good.split(',')[1]}`, 'signature_malformed'],
    ['space inside', `t=${NOW},v1 =${good.split('=')[2]}`, 'signature_malformed'],
    ['wrong signature', `t=${NOW},v1=${'0'.repeat(64)}`, 'signature_invalid'],
    ['upper-case hex', good.toUpperCase().replace('T=', 't=').replace('V1=', 'v1='), 'signature_invalid'],
    ['short signature', `t=${NOW},v1=abc`, 'signature_invalid'],
    ['one of several v1 matches', `t=${NOW},v1=${'0'.repeat(64)},${good.split(',')[1]},v0=zz`, 'accepted'],
    ['unknown schemes ignored', `${good},v0=${'1'.repeat(64)},v2=xyz`, 'accepted'],
  ])('%s', (_name, header, expected) => {
    expect(codeOf(() => verify(header))).toBe(expected);
  });

  it('checks the tolerance in both directions', () => {
    expect(codeOf(() => verify(good, { nowS: NOW + 300 }))).toBe('accepted');
    expect(codeOf(() => verify(good, { nowS: NOW - 300 }))).toBe('accepted');
    expect(codeOf(() => verify(good, { nowS: NOW + 301 }))).toBe('signature_timestamp_out_of_tolerance');
    expect(codeOf(() => verify(good, { nowS: NOW - 301 }))).toBe('signature_timestamp_out_of_tolerance');
  });

  it('accepts any configured secret (rotation) and no other', () => {
    expect(codeOf(() => verify(good, { secrets: ['whsec_new', SECRET] }))).toBe('accepted');
    expect(codeOf(() => verify(good, { secrets: ['whsec_new'] }))).toBe('signature_invalid');
  });

  it('signs the exact bytes: one changed byte or re-serialised JSON fails', () => {
    expect(codeOf(() => verify(good, { rawBody: Buffer.from('{"id":"evt_2"}') }))).toBe('signature_invalid');
    expect(codeOf(() => verify(good, { rawBody: Buffer.from('{ "id": "evt_1" }') }))).toBe('signature_invalid');
  });

  it('parses several v1 entries in order', () => {
    expect(parseSignatureHeader('t=5,v1=aa,v0=bb,v1=cc')).toEqual({ timestamp: 5, signatures: ['aa', 'cc'] });
  });
});

describe('tier resolution (unit)', () => {
  const tiers = { tiers: DEFAULT_TIERS, providerPrices: {} };
  it.each<[string, Record<string, any>, object]>([
    ['price metadata', subscriptionObject({ tier: 'team' }), { tier: 'team', source: 'price_metadata' }],
    ['lookup key equal', subscriptionObject({ tierSource: 'lookup_key', lookupKey: 'enterprise' }), { tier: 'enterprise', source: 'lookup_key' }],
    ['lookup key prefix', subscriptionObject({ tierSource: 'lookup_key', lookupKey: 'pro_yearly' }), { tier: 'pro', source: 'lookup_key' }],
    ['subscription metadata', subscriptionObject({ tierSource: 'subscription_metadata', tier: 'team' }), { tier: 'team', source: 'subscription_metadata' }],
    [
      'unrelated lookup key falls through to metadata',
      { ...subscriptionObject({ tierSource: 'subscription_metadata', tier: 'team', lookupKey: 'professional' }) },
      { tier: 'team', source: 'subscription_metadata' },
    ],
    ['nothing', subscriptionObject({ tierSource: 'none' }), { error: expect.stringMatching(/no tier/) }],
    ['unknown tier', subscriptionObject({ tier: 'gold' }), { error: expect.stringMatching(/"gold" is not a configured tier/) }],
    ['free', subscriptionObject({ tier: 'free' }), { error: expect.stringMatching(/cannot grant the free tier/) }],
    ['prefix without underscore', subscriptionObject({ tierSource: 'lookup_key', lookupKey: 'promo' }), { error: expect.any(String) }],
  ])('%s', (_name, sub, expected) => {
    expect(resolveTier(sub, tiers)).toEqual(expected);
  });

  it('price metadata wins over the lookup key and subscription metadata', () => {
    const sub = subscriptionObject({ tier: 'team', lookupKey: 'pro_monthly' });
    sub.metadata.tier = 'enterprise';
    expect(resolveTier(sub, tiers)).toEqual({ tier: 'team', source: 'price_metadata' });
  });

  it('a configured price id wins over price metadata (a plan switch in the portal changes the tier)', () => {
    // The portal moved the item to the team price; the price's own metadata still says pro.
    const sub = subscriptionObject({ tier: 'pro' });
    sub.items.data[0].price.id = 'price_team_yearly';
    const config = { tiers: DEFAULT_TIERS, providerPrices: { pro: ['price_pro'], team: ['price_team_monthly', 'price_team_yearly'] } };
    expect(resolveTier(sub, config)).toEqual({ tier: 'team', source: 'configured_price' });
    // An unconfigured price falls back to the price's metadata.
    sub.items.data[0].price.id = 'price_other';
    expect(resolveTier(sub, config)).toEqual({ tier: 'pro', source: 'price_metadata' });
  });
});
