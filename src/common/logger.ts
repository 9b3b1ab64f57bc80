import { LoggerService } from '@nestjs/common';
import pino, { Logger } from 'pino';
import pinoPretty from 'pino-pretty';

// Anything that can carry a credential. pino replaces these paths before a line is written.
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-service-key"]',
  'req.headers["payprovider-signature"]',
  'req.headers["stripe-signature"]',
  'res.headers["set-cookie"]',
  '*.token',
  '*.secret',
  '*.password',
];

// Nest's start-up chatter (one line per module and per route, ~35 in all): kept, but at debug level, so that
// `npm start` shows what a person needs (database, payments, where it listens) and LOG_LEVEL=debug shows the rest.
const FRAMEWORK_STARTUP = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/**
 * One JSON object per line, for log collectors; on a developer's terminal (stdout a TTY, outside production)
 * the same lines made readable by pino-pretty, in this process and synchronously, so nothing is lost when the
 * process exits. Production always writes JSON, whatever it runs in.
 */
export function createLogger(level: string, nodeEnv = 'development'): Logger {
  const options = { level, redact: { paths: REDACT, censor: '[redacted]' }, base: undefined };
  if (nodeEnv === 'production' || !process.stdout.isTTY) return pino(options);
  const pretty = pinoPretty({
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    messageFormat: '{if context}{context}: {end}{msg}',
    ignore: 'context',
    singleLine: true,
  });
  return pino(options, pretty);
}

/** Nest's logger interface over pino, so framework and application lines share one JSON format. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string) {
    this.write(context && FRAMEWORK_STARTUP.has(context) ? 'debug' : 'info', message, context);
  }
  error(message: unknown, traceOrContext?: string, context?: string) {
    // Nest calls error(message, stack, context) or error(message, context).
    const ctx = context ?? (traceOrContext && !traceOrContext.includes('\n') ? traceOrContext : undefined);
    const stack = traceOrContext && traceOrContext.includes('\n') ? traceOrContext : undefined;
    this.write('error', message, ctx, stack);
  }
  warn(message: unknown, context?: string) {
    this.write('warn', message, context);
  }
  debug(message: unknown, context?: string) {
    this.write('debug', message, context);
  }
  verbose(message: unknown, context?: string) {
    this.write('trace', message, context);
  }
  fatal(message: unknown, context?: string) {
    this.write('fatal', message, context);
  }

  private write(level: pino.Level, message: unknown, context?: string, stack?: string) {
    if (message instanceof Error) {
      this.logger[level]({ context, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.logger[level]({ context, ...message, stack });
    } else {
      this.logger[level]({ context, stack }, String(message));
    }
  }
}
