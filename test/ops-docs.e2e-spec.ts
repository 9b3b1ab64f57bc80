import { INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { MetadataScanner, ModulesContainer, Reflector } from '@nestjs/core';
import { ERROR_CODES } from '../src/common/error-codes';
import { ROUTE_AUTH, RouteAuth } from '../src/common/route-auth.decorators';
import { expressRoutes } from './support/express-routes';
import { startTestApp, TestApp } from './support/test-app';

/** Served by Swagger itself, on Express directly: the document does not describe them. */
const DOCS_ROUTES = /^\/api\/docs(\/|-json$|$)/;
const ERROR_SCHEMA = '#/components/schemas/ErrorResponse';

interface Operation {
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}

type Paths = Record<string, Record<string, Operation>>;

interface HandlerFacts {
  /** The route's declaration (`@Public()`, `@Session()`, ...), the handler's own else its controller's. */
  auth: RouteAuth | undefined;
  excluded: boolean;
  handler: string;
}

/** What Nest knows about each route's handler: its auth declaration, `@ApiExclude…()`, its name. By "METHOD /path". */
function nestHandlers(app: INestApplication): Map<string, HandlerFacts> {
  const facts = new Map<string, HandlerFacts>();
  const scanner = new MetadataScanner();
  const reflector = new Reflector();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new (...args: never[]) => unknown) | null;
      if (!controller) continue;
      const prefixes = [Reflect.getMetadata(PATH_METADATA, controller) ?? ''].flat() as string[];
      for (const name of scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, object>)[name];
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (method === undefined) continue;
        const paths = [Reflect.getMetadata(PATH_METADATA, handler) ?? ''].flat() as string[];
        const auth = reflector.getAllAndOverride<RouteAuth | undefined>(ROUTE_AUTH, [handler as () => unknown, controller]);
        const excluded = Boolean(
          Reflect.getMetadata('swagger/apiExcludeEndpoint', handler)?.disable ??
            Reflect.getMetadata('swagger/apiExcludeController', controller)?.[0],
        );
        for (const prefix of prefixes) {
          for (const path of paths) {
            facts.set(`${RequestMethod[method]} ${joinPath(prefix, path)}`, {
              auth,
              excluded,
              handler: `${controller.name}.${name}`,
            });
          }
        }
      }
    }
  }
  return facts;
}

const joinPath = (...parts: string[]) => `/${parts.join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
/** Express `/things/:id` → OpenAPI `/things/{id}`. */
const toOpenApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: { openapi: string; info: { title: string; version: string }; paths: Paths; components: any };

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/api/docs-json').expect(200)).body;
  });
  afterAll(() => t.close());

  it('serves the JSON and the UI without a session', async () => {
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.title).toBe('Subscription billing and licensing service');
    expect(doc.info.version).toBe(require('../package.json').version);

    const ui = await t.http().get('/api/docs').expect(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
    expect(ui.text).toContain('swagger-ui-init.js');
    const init = await t.http().get('/api/docs/swagger-ui-init.js').expect(200);
    expect(init.text).toContain('"/api/health"');
    await t.http().get('/api/docs/swagger-ui-bundle.js').expect(200);
  });

  it('answers every request with the same document', async () => {
    const again = await t.http().get('/api/docs-json').expect(200);
    expect(again.text).toBe(JSON.stringify(doc));
  });

  it('is OpenAPI 3.1 with a server, X-Request-Id on every response, closed bodies and the notifications as webhooks', () => {
    const document = doc as unknown as Record<string, any>;
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([expect.objectContaining({ url: '/' })]);
    for (const operations of Object.values<Record<string, any>>(document.paths)) {
      for (const operation of Object.values<Record<string, any>>(operations)) {
        for (const response of Object.values<Record<string, any>>(operation.responses)) {
          expect(response.headers?.['X-Request-Id']).toEqual({ $ref: '#/components/headers/X-Request-Id' });
        }
      }
    }
    expect(document.components.schemas.CreateOrganisationDto.additionalProperties).toBe(false);
    expect(Object.keys(document.webhooks)).toEqual(['license.updated', 'usage.capacity', 'trial.ending', 'usage.threshold', 'credits.low', 'credits.granted', 'credits.recharge_failed']);
    expect(JSON.stringify(document)).not.toContain('"nullable"');
  });

  it('lets a nullable reference be null: a oneOf of it and null, never an allOf that null cannot satisfy', () => {
    const schemas = (doc as unknown as Record<string, any>).components.schemas;
    expect(schemas.SubscriptionResponse.properties.subscription).toEqual({
      description: 'null: no live subscription',
      oneOf: [{ $ref: '#/components/schemas/SubscriptionView' }, { type: 'null' }],
    });
    expect(schemas.SubscriptionView.properties.pending_change.oneOf).toEqual([{ $ref: '#/components/schemas/PendingChangeView' }, { type: 'null' }]);
    const walk = (schema: any, at: string): void => {
      if (!schema || typeof schema !== 'object') return;
      if (Array.isArray(schema.type) && schema.type.includes('null') && (schema.allOf || schema.$ref)) throw new Error(`${at} cannot be null`);
      for (const [key, child] of Object.entries(schema)) walk(child, `${at}.${key}`);
    };
    expect(() => walk(schemas, 'components.schemas')).not.toThrow();
  });

  it('answers a known path with another method 404 not_found, and advertises no 405', async () => {
    const res = await t.http().put('/api/licensing/status').expect(404);
    expect(res.body).toMatchObject({ statusCode: 404, code: 'not_found' });
    expect(JSON.stringify(doc)).not.toContain('method_not_allowed');
  });

  it('types every number as an integer and every tier as a name of the tier table', () => {
    const document = doc as unknown as Record<string, any>;
    expect(JSON.stringify(document.components.schemas)).not.toContain('"number"');
    expect(document.components.schemas.LicenseInfo.properties.tier.enum).toEqual(Object.keys(t.config.tiers));
  });

  it('registers the four security schemes and the error shape', () => {
    expect(doc.components.securitySchemes).toEqual({
      session: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      session_cookie: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: 'session' }),
      service_key: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Service-Key' }),
      metrics_token: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    // The webhook's signature is documented as a header of its route, not as something to "Authorize" with: the
    // interface's name, and the real provider's, one of which it needs (neither alone is required).
    const webhook = doc.paths['/api/webhooks/payprovider'].post as Operation & { parameters: { name: string; in: string }[] };
    expect(webhook.security).toEqual([]); // no credential scheme: the signature is the header below
    expect(webhook.parameters).toEqual(
      expect.arrayContaining(
        ['Payprovider-Signature', 'Stripe-Signature'].map((name) => expect.objectContaining({ name, in: 'header', required: false })),
      ),
    );
    expect(doc.components.schemas.ErrorResponse.required).toEqual(['statusCode', 'error', 'message', 'code']);
    // Every error code, with its status, as the one table in src/common/error-codes.ts has it.
    const code = doc.components.schemas.ErrorResponse.properties.code;
    expect(code.enum).toEqual(Object.keys(ERROR_CODES));
    for (const [name, [status]] of Object.entries(ERROR_CODES)) expect(code.description).toContain(`\`${name}\` (${status})`);
  });

  it('documents /api/health, /api/me and /metrics', () => {
    expect(doc.paths['/api/health'].get.responses['503'].content!['application/json'].schema!.$ref).toBe(ERROR_SCHEMA);
    expect(doc.paths['/api/me'].get.security).toEqual(expect.arrayContaining([{ session: [] }, { session_cookie: [] }]));
    expect(doc.paths['/metrics'].get.responses['401']).toBeDefined();
  });

  it('documents every route the app serves, each protected one with its security and the error shape', () => {
    const routes = expressRoutes(t.app).filter((r) => !DOCS_ROUTES.test(r.path));
    const handlers = nestHandlers(t.app);
    // Sanity: the walk over Express found the routes we know exist, so an empty walk cannot pass.
    expect(routes).toEqual(expect.arrayContaining([{ method: 'GET', path: '/api/health' }, { method: 'GET', path: '/api/me' }]));

    const problems: string[] = [];
    for (const route of routes) {
      const facts = handlers.get(`${route.method} ${route.path}`);
      const name = `${route.method} ${route.path}${facts ? ` (${facts.handler})` : ' (registered outside Nest)'}`;
      if (facts?.excluded) continue; // an explicit @ApiExcludeEndpoint()/@ApiExcludeController() decision
      const pathItem = doc.paths[toOpenApiPath(route.path)];
      const operation = route.method === 'ALL' ? pathItem && Object.values(pathItem)[0] : pathItem?.[route.method.toLowerCase()];
      if (!operation) {
        problems.push(`${name} is missing from the OpenAPI document`);
        continue;
      }
      // No declaration: the guard's default, a session.
      const kind = facts ? (facts.auth?.kind ?? 'session') : undefined;
      const needsSession = kind === 'session' || kind === 'sessionOrServiceKey';
      if (needsSession && !operation.security?.length) problems.push(`${name} needs a session but documents no security scheme`);
      // A route that asks for any credential (session, service key, metrics token, signature) can be refused.
      if ((kind === undefined || kind === 'public') && !operation.security?.length) continue;
      const documentsErrorShape = Object.entries(operation.responses).some(
        ([status, response]) => Number(status) >= 400 && response.content?.['application/json']?.schema?.$ref === ERROR_SCHEMA,
      );
      if (!documentsErrorShape) problems.push(`${name} documents no error response with the ErrorResponse schema (@ApiErrors)`);
    }
    expect(problems).toEqual([]);
  });

  it('gives every request body an example (the UI\'s "Try it out" starts from it)', () => {
    const schemaOf = (s: any) => (s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
    const bodies = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, operation]: [string, any]) =>
        Object.entries(operation.requestBody?.content ?? {}).map(([type, media]: [string, any]) => ({ name: `${method.toUpperCase()} ${path} (${type})`, media })),
      ),
    );
    expect(bodies.map((b) => b.name)).toEqual(expect.arrayContaining([expect.stringMatching(/^POST \/api\/billing\/checkout/)]));
    const problems = bodies.flatMap(({ name, media }) => {
      if (media.example !== undefined || media.examples) return [];
      const schema = schemaOf(media.schema);
      if (schema?.example !== undefined) return [];
      const properties = Object.entries<any>(schema?.properties ?? {});
      if (!properties.length) return [`${name} has no example`];
      return properties.filter(([, p]) => schemaOf(p)?.example === undefined).map(([key]) => `${name}: ${key} has no example`);
    });
    expect(problems).toEqual([]);
  });

  it('gives every field, parameter and body a schema that says what it is (an empty one types as `unknown`)', () => {
    const empty: string[] = [];
    const walk = (schema: any, at: string): void => {
      if (!schema || typeof schema !== 'object') return;
      // A branch of a oneOf may only constrain (`required`, `properties`): its parent says the type.
      const says = ['type', '$ref', 'oneOf', 'anyOf', 'allOf', 'enum', 'const', 'properties', 'required'].some((key) => key in schema);
      if (!says) empty.push(`${at} ${JSON.stringify(schema)}`);
      for (const [name, property] of Object.entries(schema.properties ?? {})) walk(property, `${at}.${name}`);
      if (typeof schema.additionalProperties === 'object') walk(schema.additionalProperties, `${at}.*`);
      walk(schema.items, `${at}[]`);
      for (const key of ['oneOf', 'anyOf', 'allOf', 'prefixItems']) (schema[key] ?? []).forEach((branch: any, i: number) => walk(branch, `${at}.${key}[${i}]`));
      walk(schema.contentSchema, `${at} (content)`);
    };
    for (const [name, schema] of Object.entries(doc.components.schemas)) walk(schema, name);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        const at = `${method.toUpperCase()} ${path}`;
        for (const parameter of operation.parameters ?? []) walk(parameter.schema, `${at} ${parameter.in} ${parameter.name}`);
        for (const media of Object.values<any>(operation.requestBody?.content ?? {})) walk(media.schema, `${at} body`);
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          for (const media of Object.values<any>(response.content ?? {})) walk(media.schema, `${at} ${status}`);
        }
      }
    }
    expect(empty).toEqual([]);
  });

  it("names the tier table's features and metrics as the keys of every features and limits map", () => {
    const features = Object.keys(t.config.tiers.free.features);
    const metrics = Object.keys(t.config.tiers.free.metrics);
    const schemas = doc.components.schemas;
    for (const name of ['EntitlementsResponse', 'EntitlementClaims', 'Plan', 'LicenseUpdatedNotificationData']) {
      expect(schemas[name].properties.features).toMatchObject({ required: features, additionalProperties: false });
      expect(Object.keys(schemas[name].properties.features.properties)).toEqual(features);
    }
    for (const name of ['EntitlementsResponse', 'EntitlementClaims', 'Plan']) {
      expect(schemas[name].properties.limits).toMatchObject({ required: metrics, additionalProperties: false });
      expect(Object.keys(schemas[name].properties.limits.properties)).toEqual(metrics);
    }
    expect(schemas.EntitlementsResponse.properties.limits.properties.projects.allOf).toEqual([{ $ref: '#/components/schemas/LimitEntitlement' }]);
    const parameter = (path: string, name: string) =>
      Object.values<any>(doc.paths[path]).flatMap((operation) => operation.parameters).find((p) => p.name === name).schema;
    expect(parameter('/api/licensing/check', 'feature').enum).toEqual(features);
    expect(parameter('/api/admin/organisations/{id}/overrides/{name}', 'name').enum).toEqual([...features, ...metrics]);
  });

  it('documents no route the app does not serve', () => {
    const served = new Set(expressRoutes(t.app).map((r) => `${r.method} ${toOpenApiPath(r.path)}`));
    const ghosts = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .map((method) => `${method.toUpperCase()} ${path}`)
        .filter((key) => !served.has(key) && !served.has(`ALL ${key.split(' ')[1]}`)),
    );
    expect(ghosts).toEqual([]);
  });
});
