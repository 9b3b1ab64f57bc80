import { OpenAPIObject } from '@nestjs/swagger';

type Json = Record<string, any>;

const REQUEST_ID_HEADER = {
  description: 'The request id, also in the log lines of this request: quote it to support',
  schema: { type: 'string' },
};

/**
 * What every operation can answer besides its own statuses, because of where the service runs it: the HTTP
 * layer (spec §4) before any route, and the database behind nearly every route. Said once here rather than on
 * each controller, so a new route cannot forget them.
 */
const BODY_STATUSES = ['400', '413', '415'];
const TRANSPORT_STATUSES = ['408', '431', '500'];

export interface ExactOptions {
  /** Whether a route reaches the database (then it may answer 503). */
  databaseRoutes: (path: string) => boolean;
  /** The tier table's names, in order: every `tier` field is one of them. */
  tiers: string[];
  /** The tier table's metrics, in order: the check's `metric` is one of them, every other `metric` field one but `users`. */
  metrics: string[];
  /** The tier table's features, in order: the check's `feature` is one of them. */
  features: string[];
  /** Routes whose body is not held to JSON by the HTTP layer (no 415: they answer for their bodies themselves). */
  rawBodyRoutes: string[];
}

/**
 * Turns the document Nest builds from the decorators into the exact one the service serves: OpenAPI 3.1
 * (`null` as a type, so nullable fields are typed exactly, and `webhooks` for the notifications), every
 * response with its `X-Request-Id` header, public routes with `security: []`, request bodies closed
 * (`additionalProperties: false`, as the global ValidationPipe refuses unknown fields), and the statuses
 * every route shares.
 */
export function exactDocument(document: OpenAPIObject, opts: ExactOptions): OpenAPIObject {
  const doc = document as unknown as Json;
  doc.openapi = '3.1.0';
  // Nest writes `servers: []`; the service answers on whatever origin serves this document.
  doc.servers = [{ url: '/', description: 'The origin that serves this document' }];
  doc.components.headers = { ...doc.components.headers, 'X-Request-Id': REQUEST_ID_HEADER };
  for (const schema of Object.values<Json>(doc.components.schemas ?? {})) {
    toNullTypes(schema);
    refineFields(schema, opts);
  }
  for (const [path, operations] of Object.entries<Json>(doc.paths)) {
    for (const operation of Object.values<Json>(operations)) {
      operation.security ??= [];
      for (const parameter of operation.parameters ?? []) refineParameter(path, parameter, opts);
      if (operation.requestBody) closeBody(doc, operation.requestBody);
      const bodyStatuses = opts.rawBodyRoutes.includes(path) ? BODY_STATUSES.filter((status) => status !== '415') : BODY_STATUSES;
      const shared = [...TRANSPORT_STATUSES, ...(operation.requestBody ? bodyStatuses : [])];
      if (opts.databaseRoutes(path)) shared.push('503');
      for (const status of shared) operation.responses[status] ??= errorResponse();
      for (const response of Object.values<Json>(operation.responses)) {
        response.headers = { ...response.headers, 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
      }
    }
  }
  return document;
}

/** A parameter naming a metric, a feature or (an override's) either is one of the running table's names. */
function refineParameter(path: string, parameter: Json, { metrics, features }: Pick<ExactOptions, 'metrics' | 'features'>): void {
  const names =
    parameter.name === 'metric' ? metrics
    : parameter.name === 'feature' ? features
    : parameter.name === 'name' && path.endsWith('/overrides/{name}') ? [...features, ...metrics]
    : undefined;
  if (names?.length) parameter.schema.enum = [...names];
}

function errorResponse(): Json {
  return { description: '', content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } } };
}

/**
 * OpenAPI 3.0's `nullable: true` → 3.1's `type: [t, "null"]`, or a oneOf with null for a reference: a nullable
 * `type: () => Dto` comes as `{type: 'object', allOf: [ref]}`, and null cannot satisfy that allOf, whatever the
 * type beside it says (the client's type was the object alone).
 */
function toNullTypes(schema: Json): void {
  if (schema.nullable) {
    delete schema.nullable;
    if (schema.$ref || schema.allOf) {
      const ref = schema.$ref ? { $ref: schema.$ref } : schema.allOf.length === 1 ? schema.allOf[0] : { allOf: schema.allOf };
      delete schema.$ref;
      delete schema.allOf;
      delete schema.type;
      schema.oneOf = [ref, { type: 'null' }];
    } else if (schema.type) schema.type = [schema.type, 'null'];
  }
  for (const child of [...Object.values<Json>(schema.properties ?? {}), schema.items, ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) {
    if (child && typeof child === 'object') toNullTypes(child);
  }
}

/**
 * Every number this API carries is an integer (money in minor units, Unix seconds, counts: spec §Conventions),
 * so `number` becomes `integer`; a `tier` is a name of the running tier table, a `metric` (of a report, its
 * answer or a notification) one of its metrics that back-ends report, further metrics included, and the
 * `features` and `limits` maps have exactly the table's features and metrics.
 */
function refineFields(schema: Json, { tiers, metrics, features }: Pick<ExactOptions, 'tiers' | 'metrics' | 'features'>): void {
  for (const [name, field] of Object.entries<Json>(schema.properties ?? {})) {
    if (field.type === 'number') field.type = 'integer';
    if (Array.isArray(field.type) && field.type.includes('number')) field.type = field.type.map((t: string) => (t === 'number' ? 'integer' : t));
    if (name === 'tier' && !field.enum) field.enum = Array.isArray(field.type) && field.type.includes('null') ? [...tiers, null] : [...tiers];
    if (name === 'metric') field.enum = metrics.filter((metric) => metric !== 'users');
    if (name === 'features' && field.additionalProperties) keyedBy(field, features);
    if (name === 'limits' && field.additionalProperties) keyedBy(field, metrics);
  }
}

/**
 * A map over the table's names: each name a property (the DTO's own for the three metrics, else the schema the
 * DTO gives every value), all required and no other. So a client types `limits.projects` as a limit, a further
 * metric too, and a feature the table does not have does not compile.
 */
function keyedBy(field: Json, names: string[]): void {
  const value: Json = field.additionalProperties;
  field.properties = Object.fromEntries(names.map((name) => [name, field.properties?.[name] ?? { ...value }]));
  field.required = [...names];
  field.additionalProperties = false;
}

function closeBody(doc: Json, requestBody: Json): void {
  for (const media of Object.values<Json>(requestBody.content ?? {})) {
    const ref: string | undefined = media.schema?.$ref;
    const schema = ref ? doc.components.schemas[ref.split('/').pop()!] : media.schema;
    if (schema?.type === 'object' && schema.properties) schema.additionalProperties ??= false;
  }
}
