import { Injectable, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { MetricsController } from './metrics.controller';
import { enableDefaultMetrics, PoolCounts, trackPool } from './metrics';

/** Feeds this app's database pool into the pool gauges while the app runs. */
@Injectable()
class PoolMetrics implements OnModuleInit, OnApplicationShutdown {
  private untrack?: () => void;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  onModuleInit() {
    enableDefaultMetrics();
    // TypeORM's postgres driver keeps its node-postgres Pool as `master`.
    const pool = (this.dataSource.driver as unknown as { master?: PoolCounts }).master;
    if (pool) this.untrack = trackPool(pool);
  }

  onApplicationShutdown() {
    this.untrack?.();
  }
}

/** Operations: the /metrics endpoint and the metrics that need the app's providers. */
@Module({
  controllers: [MetricsController],
  providers: [PoolMetrics],
})
export class OpsModule {}
