import { Injectable, Logger } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { AppConfig } from '../config/app-config';
import { machineSigningKey, MACHINE_KEY_FILE, publicJwk, PublicSigningJwk, SigningKey } from '../config/entitlement-keys';

/**
 * The keys of signed entitlements (spec §12), resolved once when the application starts: ENTITLEMENT_SIGNING_KEYS
 * when set (the first signs, all are published, so a token of a key being rotated out still verifies while it
 * is listed); else, outside production, this machine's generated key in DATA_DIR; else none, and the token
 * route answers 503 `signing_key_missing` (said at start, at error level, since a web app gating features on
 * tokens then gets none).
 */
@Injectable()
export class EntitlementSigningKeys {
  private readonly keys: SigningKey[];
  /** The public JWK set, built once: it only changes with a restart. */
  readonly jwks: { keys: PublicSigningJwk[] };

  constructor(config: AppConfig) {
    const logger = new Logger(EntitlementSigningKeys.name);
    if (config.entitlementSigningKeys.length) {
      this.keys = config.entitlementSigningKeys;
    } else if (config.nodeEnv !== 'production') {
      const { key, created } = machineSigningKey(config.dataDir);
      if (created) logger.log(`entitlement signing key generated for this machine (kid ${key.kid}, kept in ${config.dataDir}/${MACHINE_KEY_FILE})`);
      this.keys = [key];
    } else {
      logger.error(
        'ENTITLEMENT_SIGNING_KEYS is not set: GET /api/licensing/entitlements/token answers 503 signing_key_missing ' +
          'and /.well-known/jwks.json lists no key (see docs/operations.md, "Signing keys")',
      );
      this.keys = [];
    }
    this.jwks = { keys: this.keys.map(publicJwk) };
  }

  /** The key that signs now: the first. 503 `signing_key_missing` when there is none (production without keys). */
  signer(): SigningKey {
    if (!this.keys.length) throw new AppException('signing_key_missing', 'No entitlement signing key is configured (ENTITLEMENT_SIGNING_KEYS).');
    return this.keys[0];
  }
}
