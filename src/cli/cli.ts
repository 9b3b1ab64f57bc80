import type { INestApplicationContext } from '@nestjs/common';
import { AppConfig, loadConfig } from '../config/app-config';
import { withMachineWebhookSecret } from '../config/webhook-secret';
import { openDatabase, reach } from '../database/embedded-postgres';
import { CliCommand, CliFailure, CliUsageError, parseArgv } from './cli-command';
import { consoleCommands } from './console.commands';
import { creditCommands } from './credits.commands';
import { eventCommands } from './events.commands';
import { identityCommands } from './identity.commands';
import { meterCommands } from './meters.commands';
import { notificationCommands } from './notifications.commands';
import { planCommands } from './plans.commands';
import { sandboxCommands } from './sandbox.commands';
import { webhookTriggerCommands } from './webhook-trigger.command';

/** Every operator command. A module that adds commands exports a map like identityCommands. */
export const COMMANDS: Record<string, CliCommand> = {
  ...identityCommands,
  ...eventCommands,
  ...notificationCommands,
  ...meterCommands,
  ...creditCommands,
  ...planCommands,
  ...webhookTriggerCommands,
  ...sandboxCommands,
  ...consoleCommands,
};

export function usage(): string {
  return ['usage: npm run -s cli -- <command> [--flag value]…', ...Object.values(COMMANDS).map((c) => `  ${c.usage}`)].join('\n');
}

/** A Nest application context on the configured database, and how to let go of both. */
export interface OpenedApp {
  app: INestApplicationContext;
  close(): Promise<void>;
}

export interface CliRun {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
  /** How a command that needs the database gets its application context; default: openApp. */
  open?: (config: AppConfig) => Promise<OpenedApp>;
}

/**
 * One command line, start to end: the exit code, exactly one JSON object on stdout when it is 0 (and for a CliFailure), an error on
 * stderr otherwise (2: a usage error). main.ts runs it for the real CLI; tests run it in-process.
 */
export async function runCommandLine(argv: string[], run: CliRun): Promise<number> {
  const { command, flags, args } = parseArgv(argv);
  const spec = command ? COMMANDS[command] : undefined;
  if (!spec) {
    run.stderr(`${command ? `unknown command: ${command}\n` : ''}${usage()}\n`);
    return 2;
  }
  try {
    // The server's own secret when none is configured, so that webhook:trigger signs as it expects.
    const { config } = withMachineWebhookSecret(loadConfig(run.env));
    if (spec.needsDatabase === false) {
      run.stdout(`${JSON.stringify(await spec.run(undefined, flags, args, config))}\n`);
      return 0;
    }
    const opened = await (run.open ?? openApp)(config);
    try {
      run.stdout(`${JSON.stringify(await spec.run(opened.app, flags, args, config))}\n`);
    } finally {
      await opened.close();
    }
    return 0;
  } catch (err) {
    if (err instanceof CliFailure) run.stdout(`${JSON.stringify(err.output)}\n`);
    run.stderr(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof CliUsageError ? 2 : 1;
  }
}

/**
 * The database of DATABASE_URL, or the embedded one of DATA_DIR (shared with a running `npm start`, else
 * started for the command and stopped after it), and the application on it. Says what it could not reach.
 */
export async function openApp(config: AppConfig): Promise<OpenedApp> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    log: { debug: () => undefined, warn: (m) => process.stderr.write(`${m}\n`) },
  });
  try {
    const reached = await reach(db.url, 5000);
    if (reached !== true) throw new Error(`could not reach ${db.description}: ${reached}`);
    // Loaded only here: usage errors and commands without a database answer without loading the whole app.
    const { NestFactory } = require('@nestjs/core') as typeof import('@nestjs/core');
    const { AppModule } = require('../app.module') as typeof import('../app.module');
    const app = await NestFactory.createApplicationContext(
      AppModule.forRoot(Object.assign(new AppConfig(), config, { databaseUrl: db.url })),
      { logger: ['error'], abortOnError: false },
    );
    return {
      app,
      close: async () => {
        try {
          await app.close();
        } finally {
          await db.stop();
        }
      },
    };
  } catch (err) {
    await db.stop();
    throw err;
  }
}
