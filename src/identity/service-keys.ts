import { Injectable } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { secretIndex } from '../common/secret-match';
import { AppConfig } from '../config/app-config';

export const SERVICE_KEY_HEADER = 'x-service-key';

/** Checks `X-Service-Key` against SERVICE_API_KEYS (constant time); throws 401/403 unless it matches one. */
@Injectable()
export class ServiceKeys {
  private readonly names: string[];
  private readonly match: (given: string) => number;

  constructor(config: AppConfig) {
    this.names = config.serviceApiKeys.map((k) => k.name);
    this.match = secretIndex(config.serviceApiKeys.map((k) => k.key));
  }

  /** Answers the matching key's name (never the key): the actor `service_key:<name>` of the audit log. */
  verify(header: string | string[] | undefined): string {
    if (!this.names.length) {
      throw new AppException('service_keys_not_configured', 'Service-key routes (usage reports, provisioning) are disabled: SERVICE_API_KEYS is not set.');
    }
    if (typeof header !== 'string' || !header) {
      throw new AppException('service_key_required', 'The X-Service-Key header is required.');
    }
    const found = this.match(header);
    if (found < 0) {
      throw new AppException('invalid_service_key', 'The X-Service-Key header is not a valid service key.');
    }
    return this.names[found];
  }
}
