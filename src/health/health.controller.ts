import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ApiErrors } from '../common/api-docs';
import { AppException } from '../common/app-exception';
import { Public } from '../common/route-auth.decorators';
import { AppConfig } from '../config/app-config';

@ApiTags('operations')
@Public()
@Controller('api/health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Liveness and database reachability', description: 'Public; for load balancers.' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['status', 'database', 'provider'],
      properties: {
        status: { type: 'string', enum: ['ok'] },
        database: { type: 'string', enum: ['up'] },
        provider: { type: 'string', enum: ['stripe', 'sandbox'], description: 'The payment provider in use' },
      },
    },
  })
  @ApiErrors(503)
  async check(): Promise<{ status: 'ok'; database: 'up'; provider: AppConfig['provider'] }> {
    try {
      await this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
    } catch {
      throw new AppException('database_unavailable', 'The database is unreachable.');
    }
    return { status: 'ok', database: 'up', provider: this.config.provider };
  }
}
