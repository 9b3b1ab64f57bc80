import { INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModulesContainer, Reflector } from '@nestjs/core';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROUTE_AUTH, RouteAuth } from '../src/common/route-auth.decorators';
import { expressRoutes } from './support/express-routes';
import { startTestApp, TestApp } from './support/test-app';

/**
 * Who may call each route is declared once, on the route, from the vocabulary in
 * src/common/route-auth.decorators.ts, and read by one global guard. This walks every route the app serves
 * and fails, naming the route, when one declares nothing, when its OpenAPI security does not say what it
 * declares, or when the guard does not refuse a request without the declared credential.
 */

/** Swagger's own pages, registered on Express directly (outside Nest and its guard): public by construction. */
const DOCS_ROUTES = /^\/api\/docs(\/|-json$|$)/;

interface NestRoute {
  method: string;
  path: string;
  /** `Controller.method`, for messages. */
  handler: string;
  /** The declaration in force: the handler's own, else its controller's (as the guard resolves it). */
  auth: RouteAuth | undefined;
  /** Left out of the OpenAPI document on purpose (`@ApiExcludeController()` / `@ApiExcludeEndpoint()`). */
  undocumented: boolean;
}

const joinPath = (...parts: string[]) => `/${parts.join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const name = (r: { method: string; path: string; handler?: string }) =>
  `${r.method} ${r.path}${r.handler ? ` (${r.handler})` : ''}`;

/** Every route of every controller, found through Nest's DiscoveryService and MetadataScanner. */
function nestRoutes(app: INestApplication): NestRoute[] {
  const discovery = new DiscoveryService(app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const reflector = new Reflector();
  const routes: NestRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
    if (!controller) continue;
    const prefixes = [Reflect.getMetadata(PATH_METADATA, controller) ?? ''].flat() as string[];
    for (const methodName of scanner.getAllMethodNames(controller.prototype)) {
      const handler = (controller.prototype as Record<string, () => unknown>)[methodName];
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (method === undefined) continue;
      const auth = reflector.getAllAndOverride<RouteAuth | undefined>(ROUTE_AUTH, [handler, controller]);
      const undocumented = Boolean(
        Reflect.getMetadata('swagger/apiExcludeEndpoint', handler)?.disable ??
          Reflect.getMetadata('swagger/apiExcludeController', controller)?.[0],
      );
      for (const prefix of prefixes) {
        for (const path of [Reflect.getMetadata(PATH_METADATA, handler) ?? ''].flat() as string[]) {
          routes.push({
            method: RequestMethod[method],
            path: joinPath(prefix, path),
            handler: `${controller.name}.${methodName}`,
            auth,
            undocumented,
          });
        }
      }
    }
  }
  return routes;
}

/** The OpenAPI security requirements each declaration must document (each entry one alternative). */
const EXPECTED_SECURITY: Record<RouteAuth['kind'], string[]> = {
  public: [],
  session: ['session', 'session_cookie'],
  serviceKey: ['service_key'],
  sessionOrServiceKey: ['session', 'session_cookie', 'service_key'],
  metricsToken: ['metrics_token'],
  webhookSignature: [],
  consoleSession: [],
};

/** How the guard (or, for the webhook, its signature guard) refuses a request that carries no credential. */
const REFUSAL: Record<Exclude<RouteAuth['kind'], 'public'>, { status: number; code?: string }> = {
  session: { status: 401, code: 'unauthenticated' },
  serviceKey: { status: 401, code: 'service_key_required' },
  sessionOrServiceKey: { status: 401, code: 'unauthenticated' },
  metricsToken: { status: 401, code: 'metrics_token_required' },
  webhookSignature: { status: 400, code: 'signature_missing' },
  // An HTML page: the sign-in page instead, by a redirect (no error body).
  consoleSession: { status: 303 },
};

describe('who may call each route', () => {
  let t: TestApp;
  let routes: NestRoute[];
  let doc: { paths: Record<string, Record<string, { security?: Record<string, string[]>[] }>>; components: any };

  beforeAll(async () => {
    // Keys and a metrics token configured, so that every protected route really asks for its credential.
    t = await startTestApp({ env: { SERVICE_API_KEYS: 'route-auth-key', METRICS_TOKEN: 'route-auth-metrics' } });
    routes = nestRoutes(t.app);
    doc = (await t.http().get('/api/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  it('finds the routes through Nest, and they are exactly what Express serves (besides the docs)', () => {
    // Sanity: an empty walk must not pass.
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining(['GET /api/health', 'GET /api/me', 'GET /api/licensing/status', 'POST /api/webhooks/payprovider']),
    );
    const nest = routes.map((r) => `${r.method} ${r.path}`).sort();
    const served = expressRoutes(t.app)
      .filter((r) => !DOCS_ROUTES.test(r.path))
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(served).toEqual(nest);
  });

  it('every route declares who may call it', () => {
    const undeclared = routes.filter((r) => r.auth === undefined).map((r) => `${name(r)} declares no auth`);
    expect(undeclared).toEqual([]);
  });

  it("documents each route's declaration as its OpenAPI security, and registers no webhook-signature scheme", () => {
    const problems: string[] = [];
    for (const route of routes) {
      if (route.undocumented || !route.auth) continue;
      const operation = doc.paths[toOpenApiPath(route.path)]?.[route.method.toLowerCase()];
      if (!operation) {
        problems.push(`${name(route)} is missing from the OpenAPI document`);
        continue;
      }
      const documented = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)).sort();
      const expected = [...EXPECTED_SECURITY[route.auth.kind]].sort();
      if (JSON.stringify(documented) !== JSON.stringify(expected)) {
        problems.push(`${name(route)} is ${route.auth.kind} but documents [${documented}] instead of [${expected}]`);
      }
    }
    expect(problems).toEqual([]);

    const schemes = doc.components.securitySchemes as Record<string, { name?: string }>;
    expect(Object.keys(schemes).sort()).toEqual(['metrics_token', 'service_key', 'session', 'session_cookie']);
    expect(Object.values(schemes).map((s) => s.name?.toLowerCase())).not.toContain('payprovider-signature');
  });

  it('refuses a request without the declared credential on every protected route', async () => {
    const problems: string[] = [];
    for (const route of routes) {
      if (!route.auth) continue;
      const path = route.path.replace(/:[A-Za-z0-9_]+/g, 'x');
      const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
      const res = await t.http()[method](path);
      if (route.auth.kind === 'public') {
        if (res.status === 401 || res.status === 403) problems.push(`${name(route)} is public but answered ${res.status}`);
        continue;
      }
      const wanted = REFUSAL[route.auth.kind];
      if (res.status !== wanted.status || res.body?.code !== wanted.code) {
        problems.push(`${name(route)} answered ${res.status} ${res.body?.code} instead of ${wanted.status} ${wanted.code}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('keeps the vocabulary free of identity: src/common imports nothing from src/identity', () => {
    const dir = join(__dirname, '../src/common');
    const offenders = readdirSync(dir)
      .filter((file) => file.endsWith('.ts'))
      .filter((file) => /from '\.\.\/identity\//.test(readFileSync(join(dir, file), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
