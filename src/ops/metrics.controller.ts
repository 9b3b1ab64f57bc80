import { Controller, Get, Headers, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiErrors } from '../common/api-docs';
import { AppException } from '../common/app-exception';
import { Public } from '../common/public.decorator';
import { AppConfig } from '../config/app-config';
import { registry } from './metrics';

/** Name of the OpenAPI security scheme for METRICS_TOKEN (registered in openapi.ts). */
export const METRICS_SECURITY = 'metrics_token';

/**
 * Prometheus scrape endpoint. Outside the session guard (a scraper has no user session); protected by
 * METRICS_TOKEN when one is configured, else open (keep it off the public network then).
 */
@ApiTags('operations')
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly config: AppConfig) {}

  @Get()
  @ApiOperation({
    summary: 'Prometheus metrics',
    description:
      'Request durations by route pattern and status, webhook events by type and outcome, payment-provider ' +
      'calls, database pool usage and process metrics. Needs `Authorization: Bearer <METRICS_TOKEN>` when ' +
      'METRICS_TOKEN is set.',
  })
  @ApiSecurity(METRICS_SECURITY)
  // The success is text; errors keep the JSON error shape (hence no @ApiProduces for the whole route).
  @ApiOkResponse({ description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } })
  @ApiErrors(401)
  async metrics(
    @Headers('authorization') authorization: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<string> {
    const token = this.config.metricsToken;
    if (token && !bearerMatches(authorization, token)) {
      throw new AppException(401, 'metrics_token_required', 'A valid metrics token is required.');
    }
    // Set here, not with @Header(): that would also label a 401's JSON body as text.
    res.type(registry.contentType).setHeader('Cache-Control', 'no-store');
    return registry.metrics();
  }
}

/** Constant time: both sides are hashed to equal length first, so neither content nor length leaks. */
function bearerMatches(header: string | undefined, expected: string): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '';
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
