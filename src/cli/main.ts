import 'reflect-metadata';
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { AppModule } from '../app.module';
import { AppException } from '../common/app-exception';
import { AppConfig, ConfigError, loadConfig } from '../config/app-config';
import { openDatabase } from '../database/embedded-postgres';
import { CliCommand, CliUsageError, parseArgv } from './cli-command';
import { identityCommands } from './identity.commands';
import { eventCommands } from './events.commands';
import { webhookTriggerCommands } from './webhook-trigger.command';

/** Every operator command. A module that adds commands exports a map like identityCommands. */
const COMMANDS: Record<string, CliCommand> = { ...identityCommands, ...eventCommands, ...webhookTriggerCommands };

function usage(): string {
  return ['usage: npm run -s cli -- <command> [--flag value]…', ...Object.values(COMMANDS).map((c) => `  ${c.usage}`)].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { command, flags, args } = parseArgv(argv);
  const spec = command ? COMMANDS[command] : undefined;
  if (!spec) {
    process.stderr.write(`${command ? `unknown command: ${command}\n` : ''}${usage()}\n`);
    return 2;
  }
  if (existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig(process.env);
  if (spec.needsDatabase === false) {
    process.stdout.write(`${JSON.stringify(await spec.run(undefined, flags, args))}\n`);
    return 0;
  }
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    log: { debug: () => undefined, warn: (m) => process.stderr.write(`${m}\n`) },
  });
  let app: INestApplicationContext | undefined;
  try {
    app = await NestFactory.createApplicationContext(
      AppModule.forRoot(Object.assign(new AppConfig(), config, { databaseUrl: db.url })),
      { logger: ['error'] },
    );
    const result = await spec.run(app, flags, args);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await app?.close();
    await db.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof CliUsageError || err instanceof ConfigError || err instanceof AppException) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(err instanceof CliUsageError ? 2 : 1);
    }
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
