import fc from 'fast-check';
import { requireReturnUrl } from '../src/billing/return-url';

const APP = new URL('https://app.example.com');
const accepts = (value: string) => {
  try {
    return requireReturnUrl('success_url', value, APP) === value;
  } catch {
    return false;
  }
};

describe('requireReturnUrl', () => {
  it('accepts the origin itself and any path, query or fragment under it, unchanged', () => {
    for (const url of ['https://app.example.com', 'https://app.example.com/', 'https://app.example.com?x=1',
      'https://app.example.com#f', 'https://app.example.com/billing/success?session_id={CHECKOUT_SESSION_ID}']) {
      expect(accepts(url)).toBe(true);
    }
  });

  it('accepts every web URL on the same origin', () => {
    fc.assert(fc.property(fc.webPath(), fc.webQueryParameters(), (path, query) => {
      const url = `https://app.example.com${path.startsWith('/') ? path : `/${path}`}${query ? `?${query}` : ''}`;
      return accepts(url);
    }));
  });

  it('rejects every web URL on another authority, with or without userinfo', () => {
    fc.assert(fc.property(fc.webUrl({ authoritySettings: { withUserInfo: true, withPort: true }, withQueryParameters: true, withFragments: true }), (url) => {
      const parsed = new URL(url);
      fc.pre(parsed.origin !== APP.origin || parsed.username !== '' || parsed.password !== '');
      return !accepts(url);
    }));
  });

  it('rejects relative, scheme-relative and non-http URLs with 400 invalid_return_url', () => {
    for (const url of ['/billing', '//app.example.com/billing', 'javascript://app.example.com/%0aalert(1)', 'app.example.com/x']) {
      expect(() => requireReturnUrl('cancel_url', url, APP)).toThrow(expect.objectContaining({ code: 'invalid_return_url' }));
    }
  });
});
