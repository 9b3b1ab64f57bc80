import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiErrors } from '../common/api-docs';
import { MetricsToken } from '../common/route-auth.decorators';
import { registry } from '../common/metrics';

/**
 * Prometheus scrape endpoint. A scraper has no user session: protected by METRICS_TOKEN when one is
 * configured (checked by the global guard), else open (keep it off the public network then).
 */
@ApiTags('operations')
@MetricsToken()
@Controller('metrics')
export class MetricsController {
  @Get()
  @ApiOperation({
    summary: 'Prometheus metrics',
    description:
      'Request durations by route pattern and status, webhook events by type and outcome, payment-provider ' +
      'calls, database pool usage and process metrics. Needs `Authorization: Bearer <METRICS_TOKEN>` when ' +
      'METRICS_TOKEN is set.',
  })
  // The success is text; errors keep the JSON error shape (hence no @ApiProduces for the whole route).
  @ApiOkResponse({ description: 'Prometheus text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } })
  @ApiErrors(401)
  async metrics(@Res({ passthrough: true }) res: Response): Promise<string> {
    // Set here, not with @Header(): that would also label a 401's JSON body as text.
    res.type(registry.contentType).setHeader('Cache-Control', 'no-store');
    return registry.metrics();
  }
}
