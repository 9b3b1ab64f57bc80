import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { createApp } from './app.factory';
import { AppConfig, ConfigError, loadConfig } from './config/app-config';
import { createLogger } from './common/logger';
import { openDatabase } from './database/embedded-postgres';

async function main() {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let config: AppConfig;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`Configuration error: ${err.message}`);
    process.exit(1);
  }
  const logger = createLogger(config.logLevel);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    log: { debug: (m) => logger.debug(m), warn: (m) => logger.warn(m) },
  });
  logger.info(`database: ${db.description}`);
  if (config.webhookSecretGenerated) {
    logger.info(`webhook signing secret generated for this machine: see ${config.dataDir}/webhook-secret`);
  }

  const app = await createApp(Object.assign(new AppConfig(), config, { databaseUrl: db.url }), logger);
  await app.listen(config.port);
  logger.info(`listening on http://localhost:${config.port}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal} received: shutting down`);
    await app.close();
    await db.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error('start failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
