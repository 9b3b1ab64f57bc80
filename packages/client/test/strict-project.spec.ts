import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../../test/support/free-port';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const CLIENT = join(ROOT, 'packages', 'client');
const TSC = require.resolve('typescript/bin/tsc', { paths: [ROOT] });

/**
 * What the integration guide's examples take from the text around them (a provisioned organisation, a user,
 * the web app's own helpers), declared as a web app would have them. Only names: every call into the client
 * is checked against its declarations.
 */
const GUIDE_CONTEXT = `
type Client = import('@billing-licensing/client').Client;
declare const createClient: typeof import('@billing-licensing/client').createClient;
declare const isServiceError: typeof import('@billing-licensing/client').isServiceError;
declare const process: { env: Record<string, string | undefined> };
declare const backEnd: Client;
declare const billing: Client;
declare const org: { id: string };
declare const ada: { id: string };
declare const token: string;
declare const accessToken: string;
declare const orgId: string;
declare const calls: { orgId: string; tokens: number; callId: string }[];
declare function handleRefused(call: { orgId: string }, code: string | undefined): void;
declare function show(...values: unknown[]): void;
declare function hideSsoSettings(): void;
declare function showSsoSettings(): void;
declare function refreshLicense(organisationId: string, version: number): void;
/** The guide's reservation example: the AI call whose cost (tokens spent) is known only once it has run. */
declare function runTheModel(): Promise<number>;
interface RawRequest { body: Uint8Array; headers: Record<string, string | string[] | undefined> }
interface AppResponse { status(code: number): AppResponse; json(body: unknown): AppResponse; sendStatus(status: number): void }
type AppRequest = import('@billing-licensing/client').GatedRequest & { params: Record<string, string> };
declare const app: {
  post(path: string, ...handlers: ((req: RawRequest, res: AppResponse) => void)[]): void;
  get(path: string, ...handlers: ((req: AppRequest, res: AppResponse, next: (err?: unknown) => void) => void)[]): void;
};
declare const express: { raw(options: { type: string }): (req: RawRequest, res: { sendStatus(status: number): void }) => void };
`;

/** Typed uses a web app relies on, and mistakes that must not compile (`@ts-expect-error` fails when they do). */
const USES = `
import { createClient, isServiceError, verifyEntitlements, type Entitlement, type Feature, type Metric } from '@billing-licensing/client';

declare const maybeKey: string | undefined; // e.g. process.env.BILLING_KEY
const client = createClient({ baseUrl: 'https://billing.example.com', serviceKey: maybeKey });

const e = await client.entitlements('2f1c6a4e-8f7e-4c52-9f57-0a3f8f1d2c11');
const projectsLeft: number = e.limits.projects.limit - e.limits.projects.used;
const source: 'tier' | 'seats' | 'override' = e.limits.users.source;
const sso: boolean = e.features.sso;
// @ts-expect-error not a feature of the tier table
void e.features.teleport;
// @ts-expect-error not a metric of the tier table
void e.limits.teleports;

const verified = await verifyEntitlements('a.b.c', await client.jwks(), { issuer: maybeKey });
const tokens: number = verified.limits.ai_tokens.limit;
const features: Feature[] = ['api_access', 'audit_log', 'sso'];
const metrics: Metric[] = ['projects', 'ai_tokens', 'users'];
const named: Entitlement[] = [...features, ...metrics];
await client.checkFeature(e.organisation_id, 'sso');
// @ts-expect-error not a feature of the tier table
await client.checkFeature(e.organisation_id, 'teleport');
await client.admin.overrides.set(e.organisation_id, 'ai_tokens', { value: 1 });

const bought = await client.checkoutSession('cs_test_a1');
const currency: string = bought.currency;
// @ts-expect-error a checkout session id is a string
await client.checkoutSession(42);

const { data: plans } = await client.plans();
const firstPlanProjects: number | undefined = plans[0]?.limits.projects;

try {
  await client.reportUsage({ organisation_id: e.organisation_id, metric: 'projects', amount: 1 });
} catch (err) {
  if (isServiceError(err, 'limit_exceeded')) console.log(err.status, err.requestId, err.body?.message);
  else if (isServiceError(err, 'network_error', 'bad_response')) console.log(err.code, err.status, err.cause);
  // @ts-expect-error not a code anyone throws
  else if (isServiceError(err, 'fetch_failed')) console.log(err);
}
export { currency, firstPlanProjects, named, projectsLeft, source, sso, tokens };
`;

/** Every \`\`\`ts block of a page, in order. */
function typeScriptBlocks(page: string): string[] {
  return [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/**
 * The client as a web app gets it: `npm install <path>/packages/client` into a project of its own, as
 * integrating.md says (the package's `prepare` builds it; its dist is removed first, so only that build can
 * have made it). Then used from plain JavaScript, and compiled by the strictest TypeScript project through
 * its package.json's `exports` (the ES module declarations for `import`, the CommonJS ones for `require`):
 * strict, exactOptionalPropertyTypes and noUncheckedIndexedAccess, no skipLibCheck, no Node types (a browser
 * bundle has none).
 */
describe('packages/client installed by path into a web app\'s project', () => {
  let project: string;

  beforeAll(async () => {
    project = mkdtempSync(join(tmpdir(), 'web-app-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'web-app', version: '1.0.0', private: true, type: 'module' }));
    rmSync(join(CLIENT, 'dist'), { recursive: true, force: true });
    // npm's own settings of the `npm test` running this (npm_config_*) are not the web app's.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
    await run('npm', ['install', CLIENT, '--offline', '--no-audit', '--no-fund'], { cwd: project, env });
  }, 180_000);

  it('loads as an ES module and as CommonJS, and a call throws the typed ServiceError (here: a closed port)', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const call = "createClient({ baseUrl: process.argv[2] }).plans().catch((err) => console.log(err.name, err.code, err instanceof ServiceError))";
    writeFileSync(join(project, 'imported.mjs'), `import { createClient, ServiceError } from '@billing-licensing/client';\n${call};\n`);
    writeFileSync(join(project, 'required.cjs'), `const { createClient, ServiceError } = require('@billing-licensing/client');\n${call};\n`);
    for (const script of ['imported.mjs', 'required.cjs']) {
      const { stdout } = await run(process.execPath, [script, closed], { cwd: project });
      expect(stdout.trim()).toBe('ServiceError network_error true');
    }
  }, 60_000);

  async function compile(files: Record<string, string>): Promise<string> {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(project, name), text);
    const compilerOptions = {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: false,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      lib: ['es2022', 'dom', 'dom.iterable'],
      types: [],
      noEmit: true,
    };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
    try {
      await run(process.execPath, [TSC, '-p', project], { cwd: project });
      return '';
    } catch (err) {
      return (err as { stdout: string }).stdout;
    }
  }

  it('types the entitlements, the verified token, feature and metric names and the checkout session, as ES modules and CommonJS', async () => {
    const required =
      "import client = require('@billing-licensing/client');\n" +
      "export const limit = async (): Promise<number> => (await client.createClient({ baseUrl: 'http://localhost' }).entitlements('o')).limits.projects.limit;\n";
    expect(await compile({ 'uses.mts': USES, 'required.cts': required })).toBe('');
  }, 120_000);

  it("compiles every TypeScript example of the integration guide", async () => {
    const blocks = typeScriptBlocks('docs/integrating.md');
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const files = Object.fromEntries(blocks.map((block, i) => [`guide-${i + 1}.mts`, `${block}\nexport {};\n`]));
    expect(await compile({ 'guide-context.d.ts': GUIDE_CONTEXT, ...files })).toBe('');
  }, 120_000);
});
