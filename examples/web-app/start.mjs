// `npm run example`: the example web app against the service in sandbox mode, in one command.
//
// 1. Finds the service at BILLING_URL (default http://localhost:$PORT, PORT 3000); when none answers, starts it
//    as `npm start` would (the embedded PostgreSQL, the sandbox provider) with the example's tier table, APP_URL
//    set to this app, and a service key made up for this run.
// 2. Plays the web app's back end, with the client and the service key (which never reaches the browser): an
//    organisation and a demo owner, and a session for them.
// 3. Serves the app with Vite on EXAMPLE_PORT (5173) and prints a link that signs the browser in with that
//    session (in the #fragment, which no server sees). Ctrl-C stops what it started.
//
// Sandbox only: it refuses a service that takes real payments. In your app, your back end mints sessions after
// your own login (or the service trusts your JWTs); see docs/integrating.md.
import { createClient } from '@billing-licensing/client';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const port = Number(process.env.PORT ?? 3000);
const serviceUrl = (process.env.BILLING_URL ?? `http://localhost:${port}`).replace(/\/$/, '');
const appPort = Number(process.env.EXAMPLE_PORT ?? 5173);
const appUrl = `http://localhost:${appPort}`;
const say = (line) => process.stdout.write(`[example] ${line}\n`);

async function health() {
  try {
    const answer = await fetch(`${serviceUrl}/api/health`, { headers: { Origin: appUrl }, signal: AbortSignal.timeout(2000) });
    return { body: await answer.json(), allowsApp: answer.headers.get('access-control-allow-origin') === appUrl };
  } catch {
    return null;
  }
}

/** The first key of SERVICE_API_KEYS in the repository's .env (a laptop's), for a service started from it. */
function keyFromDotEnv() {
  const file = join(root, '.env');
  if (!existsSync(file)) return undefined;
  const line = readFileSync(file, 'utf8').split('\n').find((l) => l.startsWith('SERVICE_API_KEYS='));
  const first = line?.slice('SERVICE_API_KEYS='.length).split(',')[0]?.trim();
  return first?.includes(':') ? first.slice(first.indexOf(':') + 1) : first || undefined;
}

let service;
let vite;
async function stop(code = 0) {
  await vite?.close();
  if (service && service.exitCode === null) {
    service.kill('SIGTERM');
    await new Promise((resolve) => service.once('exit', resolve));
  }
  process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void stop(0));

async function main() {
  let serviceKey = process.env.BILLING_SERVICE_KEY;
  let state = await health();
  if (!state) {
    serviceKey ??= randomBytes(24).toString('base64url');
    say(`no service answers on ${serviceUrl}: starting it (npm start: embedded PostgreSQL, sandbox payments)…`);
    service = spawn(process.execPath, ['-e', "require('./scripts/ensure-built.js'); require('./dist/src/main.js')"], {
      cwd: root,
      stdio: 'inherit',
      env: {
        ...process.env,
        PORT: String(port),
        APP_URL: appUrl,
        SERVICE_API_KEYS: `example:${serviceKey}`,
        TIERS_FILE: join(here, 'tiers.json'),
      },
    });
    service.once('exit', (code) => {
      say(`the service stopped (exit ${code})`);
      void stop(code ?? 1);
    });
    // The first start builds the service and sets up its database: give it minutes.
    for (let i = 0; i < 600 && !state; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      state = await health();
    }
    if (!state) throw new Error(`the service did not answer on ${serviceUrl} within 5 minutes`);
  } else {
    say(`using the service already running on ${serviceUrl}`);
    serviceKey ??= keyFromDotEnv();
    if (!serviceKey) {
      throw new Error(
        'a service is running but this script has no key for it: set BILLING_SERVICE_KEY to one of its SERVICE_API_KEYS (the part after "name:"), or stop it and run npm run example again to start one',
      );
    }
  }
  if (state.body.provider !== 'sandbox') throw new Error(`the service on ${serviceUrl} takes real payments (provider ${state.body.provider}): the example runs against the sandbox only`);
  if (!state.allowsApp) say(`warning: the service does not allow ${appUrl} (its APP_URL is another origin): restart it with APP_URL=${appUrl}`);

  // The web app's back end: provision (idempotent by external_id) and sign the demo user in.
  const backEnd = createClient({ baseUrl: serviceUrl, serviceKey });
  const org = await backEnd.admin.createOrganisation({ name: 'Acme (example)', external_id: 'example-org' });
  const user = await backEnd.admin.createUser({ email: 'newcomer@example.com', external_id: 'example-newcomer' });
  await backEnd.admin.putMember(org.id, user.id, { role: 'owner' });
  const { token } = await backEnd.admin.createSession({ user_id: user.id, ttl_s: 8 * 3600 });

  const { createServer } = await import('vite');
  vite = await createServer({
    root: here,
    configFile: join(here, 'vite.config.js'),
    server: { port: appPort, strictPort: true },
    define: { 'import.meta.env.VITE_BILLING_URL': JSON.stringify(serviceUrl) },
  });
  await vite.listen();
  say(`the example app: ${appUrl} (sandbox: no real payment)`);
  say(`sign in as newcomer@example.com, owner of "${org.name}": open`);
  process.stdout.write(`\n  ${appUrl}/#org=${org.id}&session=${token}\n\n`);
  say('Ctrl-C stops it' + (service ? ' and the service it started' : ''));
}

main().catch((err) => {
  say(`failed: ${err instanceof Error ? err.message : err}`);
  void stop(1);
});
