import { INestApplicationContext } from '@nestjs/common';
import { userInfo } from 'node:os';
import type { AuditActor } from '../audit/audit.service';
import { parseDecimalInteger } from '../common/query-int.decorator';
import type { AppConfig } from '../config/app-config';

export type Flags = Record<string, string | true>;

/** One operator command: reads flags, returns the JSON object printed on stdout. */
export interface CliCommand {
  usage: string;
  /** Commands that talk to a running server over HTTP need no database of their own. */
  needsDatabase?: boolean;
  /** `config` is the CLI's own (its environment), also for commands that need no database. */
  run(app: INestApplicationContext | undefined, flags: Flags, args: string[], config: AppConfig): Promise<object>;
}

export class CliUsageError extends Error {}

/** A command that ran to its end with an outcome to report as a failure: `output` on stdout, the message on stderr, exit 1. */
export class CliFailure extends Error {
  constructor(
    message: string,
    readonly output: object,
  ) {
    super(message);
  }
}

/** The operator running a changing command, for the audit log: `cli:<os user>` (no request id). */
export function cliActor(): AuditActor {
  return { actor: `cli:${userInfo().username}`, requestId: null };
}

export function requireFlag(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') throw new CliUsageError(`--${name} is required`);
  return value;
}

export function optionalFlag(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  if (value === true) throw new CliUsageError(`--${name} needs a value`);
  return value;
}

/** An optional flag that must be one of `values`. */
export function oneOfFlag<T extends string>(flags: Flags, name: string, values: readonly T[]): T | undefined {
  const value = optionalFlag(flags, name);
  if (value !== undefined && !values.includes(value as T)) throw new CliUsageError(`--${name} must be one of ${values.join(', ')}`);
  return value as T | undefined;
}

/** An optional whole-number flag within `min`..`max` (plain digits, as integer query parameters are read). */
export function integerFlag(flags: Flags, name: string, range: { min: number; max: number }, message: string): number | undefined {
  const value = optionalFlag(flags, name);
  if (value === undefined) return undefined;
  const n = parseDecimalInteger(value);
  if (n === undefined || n < range.min || n > range.max) throw new CliUsageError(message);
  return n;
}

/** `--limit N` of the list commands: 1 to 1000, default 50. */
export function limitFlag(flags: Flags): number {
  return integerFlag(flags, 'limit', { min: 1, max: 1000 }, '--limit must be a whole number from 1 to 1000') ?? 50;
}

/**
 * `--name value` and `--name=value`; positional words are returned in `args`. Every flag takes a value, so
 * the word after a flag is its value even when it begins with `--`, as a session token (base64url) can.
 * A flag with nothing after it is `true`, which the flag readers refuse as a missing value. A switch (SWITCHES)
 * takes no value: it is `true` wherever it stands.
 */
/** Flags that are switches, never followed by a value (plans:migrate --preview). */
const SWITCHES = new Set(['preview']);

export function parseArgv(argv: string[]): { command?: string; flags: Flags; args: string[] } {
  const [command, ...rest] = argv;
  const flags: Flags = {};
  const args: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const word = rest[i];
    if (!word.startsWith('--')) {
      args.push(word);
      continue;
    }
    const eq = word.indexOf('=');
    if (eq > 0) flags[word.slice(2, eq)] = word.slice(eq + 1);
    else if (SWITCHES.has(word.slice(2))) flags[word.slice(2)] = true;
    else flags[word.slice(2)] = i + 1 < rest.length ? rest[++i] : true;
  }
  return { command, flags, args };
}
