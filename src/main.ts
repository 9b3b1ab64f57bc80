import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { createApp } from './app.factory';
import { AppConfig, ConfigError, loadConfig } from './config/app-config';
import { withMachineWebhookSecret } from './config/webhook-secret';
import { createLogger } from './common/logger';
import { openDatabase } from './database/embedded-postgres';
import { drainHttpServer } from './ops/graceful-shutdown';

// How long in-flight requests may take to finish after SIGTERM/SIGINT before their connections are cut.
const SHUTDOWN_TIMEOUT_MS = 10_000;

async function main() {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let loaded: AppConfig;
  try {
    loaded = loadConfig(process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`Configuration error: ${err.message}`);
    process.exit(1);
  }
  const { config, created: secretCreated } = withMachineWebhookSecret(loaded);
  const logger = createLogger(config.logLevel, config.nodeEnv);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    log: { debug: (m) => logger.debug(m), warn: (m) => logger.warn(m) },
  });
  logger.info(`database: ${db.description}`);
  if (secretCreated) {
    // Shown once, on the start that generated it (never in production, where it must be configured), so that
    // a provider's CLI or a test tool can sign events; later starts only read .data/webhook-secret.
    logger.info(`webhook signing secret generated for this machine: ${config.webhookSecrets[0]} (kept in ${config.dataDir}/webhook-secret)`);
  }
  if (config.providerSecretKey) logger.info(`payments: the provider's API at ${config.providerApiUrl.origin} (PAYPROVIDER_SECRET_KEY is set)`);

  const app = await createApp(Object.assign(new AppConfig(), config, { databaseUrl: db.url }), logger);
  await app.listen(config.port);
  logger.info(`listening on http://localhost:${config.port} (API docs: http://localhost:${config.port}/api/docs)`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info(`${signal} received: refusing new connections, finishing in-flight requests`);
    let clean: boolean;
    try {
      clean = await drainHttpServer(app.getHttpServer(), SHUTDOWN_TIMEOUT_MS);
      if (!clean) logger.error(`requests still running after ${SHUTDOWN_TIMEOUT_MS / 1000} s: their connections were cut`);
      // Only now, with no request left, close the database pool (and the rest of the app).
      await app.close();
      await db.stop();
      logger.info('stopped');
    } catch (err) {
      clean = false;
      logger.error({ err }, 'shutdown failed');
    }
    process.exit(clean ? 0 : 1);
  };
  // Importing embedded-postgres installs handlers (async-exit-hook) that exit the process on these signals
  // at once, cutting in-flight requests. Ours replace them: drain first, then stop the embedded database.
  // A second signal while draining is ignored; SIGKILL remains the way to force it.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void stop(signal));
  }
}

main().catch((err) => {
  console.error('start failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
