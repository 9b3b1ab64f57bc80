import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

const DIGITS = /^\d+$/;
const SIGNED_DIGITS = /^-?\d+$/;

/**
 * The one reading of an integer typed by a person or a client (query parameters, CLI flags): plain decimal
 * digits, with a leading minus only when `negative`; anything else is undefined. Range checks are the caller's.
 */
export function parseDecimalInteger(text: string, { negative = false } = {}): number | undefined {
  return (negative ? SIGNED_DIGITS : DIGITS).test(text) ? Number(text) : undefined;
}

/**
 * An integer query parameter: plain decimal digits (a leading minus only where `min` is negative), within
 * `min`..`max`. Anything else — `1e2`, `0x10`, ` 5`, `5.0`, `+5`, an empty value, a repeated parameter —
 * stays as given and fails `IsInt`, so it answers 400 `validation_failed` like any other bad field.
 * (`Number()` alone would take all of these, and `@Type(() => Number)` is `Number()`.)
 */
export function QueryInt({ min, max }: { min: number; max: number }): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' ? (parseDecimalInteger(value, { negative: min < 0 }) ?? value) : value)),
    IsInt(),
    Min(min),
    Max(max),
  );
}
