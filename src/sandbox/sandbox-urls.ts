import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AppConfig } from '../config/app-config';

/**
 * Where this instance can be reached. The sandbox's pages are served by the service itself, and its events
 * go to the service's own webhook endpoint over loopback.
 */
@Injectable()
export class SandboxUrls {
  constructor(
    private readonly config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** The port actually listened on (it differs from PORT when the server was started on port 0, as in tests). */
  port(): number {
    const address = this.adapterHost.httpAdapter?.getHttpServer()?.address?.();
    return address && typeof address === 'object' ? address.port : this.config.port;
  }

  /** A link for a person's browser: under PUBLIC_URL when set (a proxy, a container's mapped port). */
  page(path: string): string {
    return this.config.publicUrl ? new URL(path, this.config.publicUrl).href : `http://localhost:${this.port()}${path}`;
  }

  /** Our own webhook endpoint, over loopback, so delivery never leaves the machine. */
  webhook(): string {
    return `http://127.0.0.1:${this.port()}/api/webhooks/payprovider`;
  }
}
