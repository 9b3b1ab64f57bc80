import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

const DIGITS = /^\d+$/;
const SIGNED_DIGITS = /^-?\d+$/;

/**
 * An integer query parameter: plain decimal digits (a leading minus only where `min` is negative), within
 * `min`..`max`. Anything else — `1e2`, `0x10`, ` 5`, `5.0`, `+5`, an empty value, a repeated parameter —
 * stays as given and fails `IsInt`, so it answers 400 `validation_failed` like any other bad field.
 * (`Number()` alone would take all of these, and `@Type(() => Number)` is `Number()`.)
 */
export function QueryInt({ min, max }: { min: number; max: number }): PropertyDecorator {
  const shape = min < 0 ? SIGNED_DIGITS : DIGITS;
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' && shape.test(value) ? Number(value) : value)),
    IsInt(),
    Min(min),
    Max(max),
  );
}
