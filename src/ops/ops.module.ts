import { Module, OnModuleInit } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { enableDefaultMetrics } from '../common/metrics';

/** Operations: the /metrics endpoint. (The database pool reports itself: see database/typeorm-options.ts.) */
@Module({
  controllers: [MetricsController],
})
export class OpsModule implements OnModuleInit {
  onModuleInit() {
    enableDefaultMetrics();
  }
}
