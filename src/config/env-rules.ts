import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { Allow, ValidateBy, ValidationArguments } from 'class-validator';
import type { EnvDto } from './env.dto';

// The rules EnvDto (env.dto.ts) declares its variables with. Every value arrives trimmed, and an empty one
// is left out, so `undefined` always means "unset": a rule accepts it unless it says the variable is required.
// Each message names its variable; one whose value may hold a credential (a URL, a secret) never echoes it.
// The rules of one variable are independent of each other (validation stops at the first that fails, in the
// order the decorators are applied, bottom-up); a variable's first failing rule is the message.

type Message = (args: ValidationArguments) => string;

/** One rule: `test` sees the variable's (transformed) value and the whole environment, for cross-variable rules. */
export function Rule(message: string | Message, test: (value: any, env: EnvDto) => boolean): PropertyDecorator {
  return ValidateBy({
    name: 'envRule',
    validator: {
      validate: (value, args) => test(value, args!.object as EnvDto),
      defaultMessage: (args) => (typeof message === 'string' ? message : message(args!)),
    },
  });
}

/** Digits only become a number; anything else (1.5, 1e3, -1, 0x10) stays as given and fails. */
export function Int(min: number, max: number): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (/^\d+$/.test(value) ? Number(value) : value)),
    Rule(
      (a) => `${a.property} must be an integer from ${min} to ${max}, got "${a.value}"`,
      (v) => v === undefined || (Number.isInteger(v) && v >= min && v <= max),
    ),
  );
}

export function OneOf(allowed: readonly string[]): PropertyDecorator {
  return Rule((a) => `${a.property} must be one of ${allowed.join(', ')}, got "${a.value}"`, (v) => v === undefined || allowed.includes(v));
}

/** `true` or `false`, as a boolean. */
export function Bool(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value)),
    Rule((a) => `${a.property} must be one of true, false, got "${a.value}"`, (v) => v === undefined || typeof v === 'boolean'),
  );
}

/** A comma-separated list, as its trimmed non-empty entries. */
export function List(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => list(value)),
    Allow(),
  );
}

export function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function isHttpUrl(value: string): boolean {
  return URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);
}

/** An absolute http(s) URL; `echo: false` for one that may carry a token. */
export function HttpUrl({ echo }: { echo: boolean }): PropertyDecorator {
  return Rule(
    (a) => `${a.property} must be an absolute http(s) URL${echo ? `, got "${a.value}"` : ''}`,
    (v) => v === undefined || isHttpUrl(v),
  );
}

/** An http(s) origin such as https://app.example.com: no path, query or credentials. */
export function Origin(): PropertyDecorator {
  return applyDecorators(
    HttpUrl({ echo: true }),
    Rule(
      (a) => `${a.property} must be an origin such as https://app.example.com (no path, query or credentials)`,
      (v) => v === undefined || !isHttpUrl(v) || isOrigin(new URL(v)),
    ),
  );
}

function isOrigin(url: URL): boolean {
  return url.pathname === '/' && !url.search && !url.hash && !url.username;
}

/** Never echoed: it may hold a password. */
export function PostgresUrl(): PropertyDecorator {
  return Rule(
    (a) => `${a.property} must be a postgres:// or postgresql:// URL`,
    (v) => v === undefined || (URL.canParse(v) && ['postgres:', 'postgresql:'].includes(new URL(v).protocol)),
  );
}
