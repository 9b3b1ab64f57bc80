import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { migrate } from './migrate';
import { sendStatementsUnnamed } from './prepared';
import { SESSION_SETTINGS, trustStartupStatementTimeout, typeOrmOptions } from './typeorm-options';

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
              throughPooler: config.databaseThroughPooler,
              onPoolError: (err) => logger.warn(`idle database connection failed: ${err.message}`),
              refuseSecondConnection: config.nodeEnv !== 'production',
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
            const db = new DataSource(options!);
            if (!config.databaseNamedStatements) sendStatementsUnnamed(db);
            await db.initialize();
            await checkSessionDefaults(db, config.databaseStatementTimeoutMs, logger);
            await trustStartupStatementTimeout(db);
            return db;
          },
        }),
      ],
    };
  }
}

/**
 * Says so at start when a statement outside a transaction would run without the time limit, or a session with
 * another setting than SESSION_SETTINGS (JIT on): behind a pooler the connections send no startup parameter
 * (spec §1), and only the role's own settings (the operator's part, docs/operations.md) reach such statements.
 * Transactions set the time limit themselves.
 */
async function checkSessionDefaults(db: DataSource, limitMs: number, logger: Logger): Promise<void> {
  const [{ ms, role }] = await db.query(`SELECT setting::int AS ms, quote_ident(current_user) AS role FROM pg_settings WHERE name = 'statement_timeout'`);
  if (!(ms > 0 && ms <= limitMs)) {
    logger.warn(
      `statements outside a transaction run with statement_timeout ${ms} ms, not DATABASE_STATEMENT_TIMEOUT_MS (${limitMs} ms): ` +
        `behind PgBouncer, run ALTER ROLE ${role} SET statement_timeout = ${limitMs}`,
    );
  }
  for (const [name, wanted] of Object.entries(SESSION_SETTINGS)) {
    const [{ value }] = await db.query(`SELECT current_setting($1) AS value`, [name]);
    if (value === wanted) continue;
    logger.warn(
      `the database sessions run with ${name} = ${value}, not ${wanted}, which makes the hot statements several hundred times dearer: ` +
        `behind PgBouncer, run ALTER ROLE ${role} SET ${name} = ${wanted}`,
    );
  }
}
