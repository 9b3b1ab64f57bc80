import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

// test/support/spec-groups.js is Jest's filter (jest.config.js): plain CommonJS.
const filter = require('./support/spec-groups') as {
  (paths: string[], env?: Record<string, string>, log?: (line: string) => void): Promise<{ filtered: string[] }>;
  GROUPS_DIR: string;
  EXTENDED_GROUPS: string[];
  importedSpecs(groupPath: string): string[];
};

const TEST_DIR = __dirname;
const groups = readdirSync(filter.GROUPS_DIR).map((name) => join(filter.GROUPS_DIR, name));
const e2eSpecs = (readdirSync(TEST_DIR, { recursive: true }) as string[])
  .filter((path) => path.endsWith('.e2e-spec.ts'))
  .map((path) => join(TEST_DIR, path))
  .filter((path) => !groups.includes(path));
const name = (path: string) => relative(TEST_DIR, path);

describe('end-to-end spec groups (npm test runs e2e specs through test/groups/*)', () => {
  it('every e2e spec file belongs to a group, or npm test would run it alone (one more load of the app)', () => {
    const grouped = new Set(groups.flatMap(filter.importedSpecs));
    const orphans = e2eSpecs.filter((path) => !grouped.has(path)).map(name);
    // Add an import of the new spec to the group of its area in test/groups/.
    expect(orphans).toEqual([]);
  });

  it('every import of a group names an existing spec file', () => {
    const missing = groups.flatMap(filter.importedSpecs).filter((path) => !e2eSpecs.includes(path));
    expect(missing.map(name)).toEqual([]);
  });

  it('the filter: everything matched runs the groups; a spec named alone runs alone; each test once', async () => {
    const unit = join(TEST_DIR, 'config.spec.ts');
    const all = [...groups, ...e2eSpecs, unit];
    expect((await filter(all, { TEST_ALL: '1' })).filtered.sort()).toEqual([...groups, unit].sort());
    const usage = join(TEST_DIR, 'usage.e2e-spec.ts');
    expect((await filter([usage], {})).filtered).toEqual([usage]);
    // `npx jest webhook`: the webhook group, and the matched webhook spec that another group holds (the CLI's).
    const webhookGroup = join(filter.GROUPS_DIR, 'webhook.e2e-spec.ts');
    const webhookSpecs = e2eSpecs.filter((path) => name(path).startsWith('webhook'));
    const run = (await filter([webhookGroup, ...webhookSpecs], {})).filtered;
    expect(run[0]).toBe(webhookGroup);
    expect(run.slice(1).map(name)).toEqual(webhookSpecs.filter((path) => !filter.importedSpecs(webhookGroup).includes(path)).map(name));
  });

  it('npm test (every group matched) leaves out the long-running and PgBouncer groups and says so; TEST_ALL or naming one runs it', async () => {
    const unit = join(TEST_DIR, 'config.spec.ts');
    const all = [...groups, ...e2eSpecs, unit];
    const [long, pgbouncer] = filter.EXTENDED_GROUPS;
    const lines: string[] = [];
    const quick = (await filter(all, {}, (line) => lines.push(line))).filtered;
    expect(quick.sort()).toEqual([...groups.filter((g) => !filter.EXTENDED_GROUPS.includes(g)), unit].sort());
    expect(lines).toEqual([expect.stringContaining('npm run test:all')]);
    // Their specs do not run alone either; those that npm test's groups import run there (the pooler's own does not).
    const quickGroups = groups.filter((g) => !filter.EXTENDED_GROUPS.includes(g));
    const ranSomewhere = new Set([...quick, ...quickGroups.flatMap(filter.importedSpecs)]);
    expect(filter.importedSpecs(long).filter((path) => ranSomewhere.has(path))).toEqual([]);
    expect(filter.importedSpecs(pgbouncer).filter((path) => !ranSomewhere.has(path)).map(name)).toEqual(['pgbouncer/pooler.e2e-spec.ts']);

    expect((await filter(all, { TEST_ALL: '1' }, (line) => lines.push(line))).filtered).toEqual(expect.arrayContaining(filter.EXTENDED_GROUPS));
    expect((await filter([long], {}, (line) => lines.push(line))).filtered).toEqual([long]);
    const oneSpec = filter.importedSpecs(long)[0];
    expect((await filter([oneSpec], {}, (line) => lines.push(line))).filtered).toEqual([oneSpec]);
    expect(lines).toHaveLength(1);
  });
});
