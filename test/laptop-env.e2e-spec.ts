import { readFileSync } from 'node:fs';
import { TEARDOWN_TIMEOUT_MS } from './support/cleanup';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { createClient } from '../packages/client/src';
import { createTestDatabase, TestDatabase } from './support/databases';
import { NotificationReceiver, startReceiver } from './support/notification-receiver';
import { PROCESS_TEST_TIMEOUT_MS, ServerProcess, spawnServer } from './support/server-process';
import { waitFor } from './support/wait-for';

const EXAMPLE = readFileSync(join(__dirname, '..', '.env.example'), 'utf8');

/**
 * An integrating team's laptop start (issue #38): `cp .env.example .env && npm start`. The built service runs
 * in a folder holding that `.env` and nothing else; the test's environment adds only what its machine needs
 * (its database, a free port, and where its receiver listens, which win over the file as they would in a
 * shell).
 */
describe('.env.example, copied to .env', () => {
  const example = parseEnv(EXAMPLE);
  let database: TestDatabase;
  let receiver: NotificationReceiver;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await startReceiver(example.NOTIFY_SECRET!);
  });
  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await database?.drop();
  }, TEARDOWN_TIMEOUT_MS);

  it('sets the integration up: its service key provisions, and its secret signs what the web app receives', async () => {
    expect(Object.keys(example)).toEqual(expect.arrayContaining(['SERVICE_API_KEYS', 'NOTIFY_URLS', 'NOTIFY_SECRET']));
    server = await spawnServer({ DATABASE_URL: database.url, NOTIFY_URLS: receiver.url }, undefined, { '.env': EXAMPLE });
    await server.healthy();

    const [, key] = /^[\w.-]+:(.+)$/.exec(example.SERVICE_API_KEYS!.split(',')[0]!)!;
    const backEnd = createClient({ baseUrl: `http://127.0.0.1:${server.port}`, serviceKey: key });
    const organisation = await backEnd.admin.createOrganisation({ name: 'Laptop Ltd', external_id: 'laptop_1' });
    await backEnd.admin.overrides.set(organisation.id, 'sso', { value: true, note: 'Trying SSO on a laptop' });

    // Verified by the receiver with the file's NOTIFY_SECRET: a message signed with another would not count.
    const message = await waitFor('the signed license.updated', () => receiver.accepted(organisation.id)[0]);
    expect(message.json).toMatchObject({ type: 'license.updated', data: { external_id: 'laptop_1', features: { sso: true } } });
  }, PROCESS_TEST_TIMEOUT_MS);
});
