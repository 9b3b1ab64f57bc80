import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authJwtWarning, ConfigError, loadConfig } from '../src/config/app-config';

const base = () => ({ DATA_DIR: mkdtempSync(join(tmpdir(), 'billing-config-')), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' });

describe('loadConfig: AUTH_JWT_*', () => {
  it('is off by default: sessions only', () => {
    expect(loadConfig(base()).authJwt).toBeUndefined();
  });

  it('reads the JWKS URL, and the issuer and audience when set', () => {
    const config = loadConfig({
      ...base(),
      AUTH_JWT_JWKS_URL: 'https://app.example.com/.well-known/jwks.json',
      AUTH_JWT_ISSUER: 'https://app.example.com',
      AUTH_JWT_AUDIENCE: 'billing',
    });
    expect(config.authJwt).toEqual({
      jwksUrl: new URL('https://app.example.com/.well-known/jwks.json'),
      issuer: 'https://app.example.com',
      audience: 'billing',
    });
    const bare = loadConfig({ ...base(), AUTH_JWT_JWKS_URL: 'http://127.0.0.1:8080/jwks' }).authJwt;
    expect(bare).toEqual({ jwksUrl: new URL('http://127.0.0.1:8080/jwks'), issuer: undefined, audience: undefined });
  });

  it.each(['not a url', 'ftp://app.example.com/jwks', 'file:///etc/jwks.json'])(
    'stops on AUTH_JWT_JWKS_URL=%s with a message naming it',
    (value) => {
      expect(() => loadConfig({ ...base(), AUTH_JWT_JWKS_URL: value })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base(), AUTH_JWT_JWKS_URL: value })).toThrow('AUTH_JWT_JWKS_URL');
    },
  );

  it('never echoes a bad JWKS URL, which may carry a credential', () => {
    expect(() => loadConfig({ ...base(), AUTH_JWT_JWKS_URL: 'ftp://u:hunter2@x/jwks' })).toThrow(/^(?!.*hunter2)/);
  });

  it.each(['AUTH_JWT_ISSUER', 'AUTH_JWT_AUDIENCE'])('stops on %s without AUTH_JWT_JWKS_URL (it would accept nothing)', (name) => {
    expect(() => loadConfig({ ...base(), [name]: 'x' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: 'x' })).toThrow(`${name} is set but AUTH_JWT_JWKS_URL is not`);
  });
});

describe('authJwtWarning', () => {
  const warning = (url: string, nodeEnv = 'production') => authJwtWarning({ nodeEnv, authJwt: { jwksUrl: new URL(url) } });

  it('warns in production about a plain-http or loopback JWKS URL, which is accepted', () => {
    expect(warning('http://auth.internal/jwks')).toMatch(/AUTH_JWT_JWKS_URL is plain http in production/);
    for (const url of ['https://localhost/jwks', 'https://127.0.0.1:8443/jwks', 'https://[::1]/jwks', 'https://auth.localhost/jwks']) {
      expect(warning(url)).toMatch(/AUTH_JWT_JWKS_URL is a loopback address in production/);
    }
  });

  it('says nothing for https to another host, outside production, or with JWTs off', () => {
    expect(warning('https://app.example.com/.well-known/jwks.json')).toBeUndefined();
    expect(warning('http://127.0.0.1/jwks', 'development')).toBeUndefined();
    expect(authJwtWarning({ nodeEnv: 'production', authJwt: undefined })).toBeUndefined();
  });
});
