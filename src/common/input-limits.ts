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
 * After the JSON body parser: a body nested deeper than MAX_JSON_DEPTH, or holding a NUL character in a
 * string or a key, → 400 before anything validates or stores it. One iterative walk (no recursion, so
 * no depth is too deep for it), which stops at the first offence. Routes in `except` keep their bodies
 * as they are: the webhook must never refuse a correctly signed event for its contents (it stores the
 * raw bytes it verified and answers for them itself).
 */
export function jsonBodyLimits(except: readonly string[]) {
  const skip = new Set(except);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (req.body === null || typeof req.body !== 'object' || skip.has(req.path)) return next();
    const offence = findOffence(req.body);
    if (offence === 'depth') {
      return next(new AppException('json_too_deep', `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels.`));
    }
    if (offence === 'nul') {
      return next(new AppException('nul_character', 'The JSON body holds a NUL character (\\u0000), which no field may contain.'));
    }
    next();
  };
}

function findOffence(root: object): 'depth' | 'nul' | undefined {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return 'nul';
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return 'depth';
    for (const key of Object.keys(value)) {
      if (key.includes('\u0000')) return 'nul';
      stack.push([(value as Record<string, unknown>)[key], depth + 1]);
    }
  }
  return undefined;
}
