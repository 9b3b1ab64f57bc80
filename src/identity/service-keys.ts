import { Injectable } from '@nestjs/common';
import { AppException } from '../common/app-exception';
import { secretMatcher } from '../common/secret-match';
import { AppConfig } from '../config/app-config';

export const SERVICE_KEY_HEADER = 'x-service-key';

/** Checks `X-Service-Key` against SERVICE_API_KEYS (constant time); throws 401/403 unless it matches one. */
@Injectable()
export class ServiceKeys {
  private readonly configured: boolean;
  private readonly matches: (given: string) => boolean;

  constructor(config: AppConfig) {
    this.configured = config.serviceApiKeys.length > 0;
    this.matches = secretMatcher(config.serviceApiKeys);
  }

  verify(header: string | string[] | undefined): void {
    if (!this.configured) {
      throw new AppException('service_keys_not_configured', 'Service-key routes (usage reports, provisioning) are disabled: SERVICE_API_KEYS is not set.');
    }
    if (typeof header !== 'string' || !header) {
      throw new AppException('service_key_required', 'The X-Service-Key header is required.');
    }
    if (!this.matches(header)) {
      throw new AppException('invalid_service_key', 'The X-Service-Key header is not a valid service key.');
    }
  }
}
