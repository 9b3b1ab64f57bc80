import { INestApplication } from '@nestjs/common';
import { mkdtempSync } from 'node:fs';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp } from '../../src/app.factory';
import { PriceCatalog } from '../../src/provider/price-catalog';
import { AppConfig, loadConfig } from '../../src/config/app-config';
import { IdentityService } from '../../src/identity/identity.service';
import { Role } from '../../src/identity/membership.entity';
import { SessionService } from '../../src/identity/session.service';
import { createTestDatabase } from './databases';
import { recordStatuses } from './observed-statuses';
import { activePgBouncer } from './pgbouncer';
import { TEST_PRICE_PRO } from './provider-events';

export const TEST_WEBHOOK_SECRET = 'whsec_test_secret';

/** The configuration a test app runs with: quiet, a known webhook secret, its own data dir. */
export function testConfig(databaseUrl: string, env: Record<string, string | undefined> = {}): AppConfig {
  return loadConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    LOG_LEVEL: 'silent',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'billing-data-')),
    // Invoice lines built by test/support/provider-events.ts carry this price: they are this service's.
    PAYPROVIDER_PRICE_PRO: TEST_PRICE_PRO,
    ...env,
  });
}

export interface TestApp {
  app: INestApplication;
  config: AppConfig;
  /** The app's own DataSource, for assertions on stored rows. */
  db: DataSource;
  /** Base URL of the listening server (http://127.0.0.1:port). */
  baseUrl: string;
  http: () => ReturnType<typeof request>;
  /** The database itself (never the pooler): give it to another instance, or to assertions' own clients. */
  databaseUrl: string;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  /** Reuse a database (several app instances on one database); default: a fresh one. */
  databaseUrl?: string;
  /** Collect log lines (JSON strings) instead of discarding them. */
  logLines?: string[];
  /**
   * Return before the plan list's first price read is done (default: after it, so that tests counting the
   * provider's requests do not count the start's background reads).
   */
  skipPriceWait?: boolean;
}

/**
 * Starts the real app, listening on a random port, against its own fresh database; through PgBouncer in
 * transaction mode when the spec file asked for it (`throughPgBouncer()`, test/support/pgbouncer.ts).
 */
export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const fresh = opts.databaseUrl ? undefined : await createTestDatabase();
  const databaseUrl = opts.databaseUrl ?? fresh!.url;
  const bouncer = activePgBouncer();
  const config = bouncer
    ? testConfig(bouncer.urlFor(databaseUrl), { DATABASE_DIRECT_URL: databaseUrl, ...opts.env })
    : testConfig(databaseUrl, opts.env);
  const logger = opts.logLines
    ? pino({ level: 'debug' }, { write: (line: string) => void opts.logLines!.push(line) })
    : pino({ level: 'silent' });
  const app = await createApp(config, logger);
  recordStatuses(app);
  await app.listen(0, '127.0.0.1');
  if (!opts.skipPriceWait) await app.get(PriceCatalog).settled();
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    app,
    config,
    db: app.get(DataSource),
    baseUrl: `http://127.0.0.1:${port}`,
    http: () => request(app.getHttpServer()),
    databaseUrl,
    close: async () => {
      await app.close();
      await fresh?.recycle();
    },
  };
}

/** Test factories: an organisation with members, each with a live session token. */
export async function createOrganisation(t: TestApp, name = 'Acme') {
  return t.app.get(IdentityService).createOrganisation(name);
}

let userCounter = 0;
export async function createUserWithSession(t: TestApp, opts: { org?: string; role?: Role } = {}) {
  const identity = t.app.get(IdentityService);
  const user = await identity.createUser(`user${++userCounter}.${Date.now()}@example.com`);
  if (opts.org) await identity.addMember(opts.org, user.id, opts.role ?? 'member');
  const { token } = await t.app.get(SessionService).create(t.db.manager, user.id, 3600);
  return { ...user, token, auth: { Authorization: `Bearer ${token}` } };
}
