import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

// Every status the end-to-end specs see each route answer is compared, after the run, with the statuses the
// API document promises for that route (globalTeardown): an answer the document does not list fails the run.
// So the document cannot silently lag behind what the service really does.

const folder = () => join(process.env.TMPDIR ?? '/tmp', 'observed-statuses');
const seen = new Set<string>();

/**
 * Records `METHOD path status` of every response of a test app (once per distinct line, per Jest worker), from
 * the HTTP server itself, so that answers given before any route (413, malformed JSON, 408) count too.
 */
export function recordStatuses(app: INestApplication): void {
  (app.getHttpServer() as Server).prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    res.on('finish', () => {
      const line = `${req.method} ${new URL(req.url ?? '/', 'http://x').pathname} ${res.statusCode}`;
      if (seen.has(line)) return;
      seen.add(line);
      mkdirSync(folder(), { recursive: true });
      appendFileSync(join(folder(), `${process.pid}.txt`), `${line}\n`);
    });
  });
}

type Operations = Record<string, { responses: Record<string, unknown> }>;

/** The observed answers that the document does not list for their operation, e.g. `GET /api/me 503`. */
export function undocumentedStatuses(document: { paths: Record<string, Operations> }): string[] {
  if (!existsSync(folder())) return [];
  const routes = Object.entries(document.paths).map(([path, operations]) => ({
    path,
    pattern: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    operations,
  }));
  const missing = new Set<string>();
  for (const file of readdirSync(folder())) {
    for (const line of readFileSync(join(folder(), file), 'utf8').split('\n').filter(Boolean)) {
      const [method, path, status] = line.split(' ');
      const route = routes.find((r) => r.pattern.test(path));
      const operation = route?.operations[method.toLowerCase()];
      // Routes outside the document (sandbox and return pages, the document itself) and unknown paths (404) are not its business.
      if (!route || !operation) continue;
      const responses = Object.keys(operation.responses);
      if (!responses.includes(status) && !responses.includes(`${status[0]}XX`)) missing.add(`${method} ${route.path} ${status}`);
    }
  }
  return [...missing].sort();
}
