import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { migrate } from './migrate';
import { typeOrmOptions } from './typeorm-options';

@Module({})
export class DatabaseModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.databaseUrl) throw new Error('DatabaseModule needs a database URL; main.ts resolves it first');
    const logger = new Logger('Database');
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...typeOrmOptions({
              url: config.databaseUrl!,
              poolSize: config.databasePoolSize,
              queryTimeoutMs: config.databaseQueryTimeoutMs,
              statementTimeoutMs: config.databaseStatementTimeoutMs,
              namedStatements: config.databaseNamedStatements,
              onPoolError: (err) => logger.warn(`idle database connection failed: ${err.message}`),
            }),
            // Start-up against an unreachable database fails within seconds, with the cause logged.
            retryAttempts: 1,
            retryDelay: 1000,
          }),
          dataSourceFactory: async (options) => {
            // Migrations first, over PostgreSQL itself (they hold a session lock), then the app's pool,
            // which may go through a pooler.
            await migrate(config.databaseDirectUrl ?? config.databaseUrl!, {
              lockTimeoutS: config.migrationLockTimeoutS,
              log: (message) => logger.log(message),
            });
            return new DataSource(options!).initialize();
          },
        }),
      ],
    };
  }
}
