import type { NextFunction, Request, Response } from 'express';
import { AppException } from './app-exception';

/** Deeper JSON is refused before validation, whose recursion would otherwise overflow the stack (a 500). */
export const MAX_JSON_DEPTH = 64;

/**
 * 400 for a URL holding an encoded NUL (`%00`) anywhere, in a query value or a path segment: PostgreSQL
 * text cannot hold one, so it would otherwise fail as a 500 deep inside a statement. (A raw NUL never
 * gets this far: Node's HTTP parser refuses it.)
 */
export function rejectNulInUrl(req: Request, _res: Response, next: NextFunction): void {
  if (req.url.includes('%00')) {
    return next(new AppException('nul_character', 'The URL holds a NUL character (%00), which no parameter may contain.'));
  }
  next();
}

/**
 * Names no body or query field has, which the validation step cannot see: class-transformer drops them
 * while building the DTO (against prototype pollution), so `forbidNonWhitelisted` never meets them and
 * they would pass where any other unknown field is refused. Refused here like any unknown field.
 */
const RESERVED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

// The ValidationPipe's own answer for an unknown field.
const unknownField = (key: string) => new AppException('validation_failed', `property ${key} should not exist`);

/** 400 for a query parameter named like RESERVED_NAMES, as for any unknown one (see there). */
export function rejectReservedQueryNames(req: Request, _res: Response, next: NextFunction): void {
  const reserved = req.url.includes('?') ? Object.keys(req.query).find((key) => RESERVED_NAMES.has(key)) : undefined;
  next(reserved === undefined ? undefined : unknownField(reserved));
}

/**
 * Before the body parsers: a request under `prefix` that carries a body must carry JSON (415
 * `unsupported_media_type` otherwise), so that a form post, whose values all arrive as strings, never
 * reaches a route written for JSON. Requests without a body (GET, DELETE, an empty POST) pass. Routes in
 * `except` keep their own rules (the webhook verifies its raw bytes and answers for their type itself);
 * paths outside `prefix` (the sandbox's HTML forms) may still post forms.
 */
export function jsonOnlyBodies(prefix: string, except: readonly string[]) {
  const skip = new Set(except);
  return (req: Request, _res: Response, next: NextFunction): void => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
    if (!hasBody || !req.path.startsWith(prefix) || skip.has(req.path) || req.is('application/json')) return next();
    next(new AppException('unsupported_media_type', 'The body must be JSON, sent with Content-Type: application/json.'));
  };
}

/**
 * After the JSON body parser: a body nested deeper than MAX_JSON_DEPTH, holding a NUL character in a
 * string or a key, or a key of RESERVED_NAMES at any depth → 400 before anything validates or stores it. One iterative walk (no recursion, so
 * no depth is too deep for it), which stops at the first offence. Routes in `except` keep their bodies
 * as they are: the webhook must never refuse a correctly signed event for its contents (it stores the
 * raw bytes it verified and answers for them itself).
 */
export function jsonBodyLimits(except: readonly string[]) {
  const skip = new Set(except);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (req.body === null || typeof req.body !== 'object' || skip.has(req.path)) return next();
    const offence = findOffence(req.body);
    if (offence?.kind === 'depth') {
      return next(new AppException('json_too_deep', `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`));
    }
    if (offence?.kind === 'nul') {
      return next(new AppException('nul_character', 'The JSON body holds a NUL character (\\u0000), which no field may contain.'));
    }
    if (offence?.kind === 'reserved') return next(unknownField(offence.key));
    next();
  };
}

type Offence = { kind: 'depth' } | { kind: 'nul' } | { kind: 'reserved'; key: string };

function findOffence(root: object): Offence | undefined {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return { kind: 'nul' };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return { kind: 'depth' };
    for (const key of Object.keys(value)) {
      if (key.includes('\u0000')) return { kind: 'nul' };
      if (RESERVED_NAMES.has(key)) return { kind: 'reserved', key };
      stack.push([(value as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return undefined;
}
