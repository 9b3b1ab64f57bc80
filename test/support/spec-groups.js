// Jest's `filter` (jest.config.js), so that every matched test runs once. The end-to-end specs are grouped for
// speed: test/groups/<area>.e2e-spec.ts imports the spec files of its area, so the app's modules load once per
// group. Of the files a command matched, a spec that a matched group imports is left to that group:
// `npm test` (everything matched) runs the groups, `npx jest test/usage.e2e-spec.ts` runs that file alone, and
// `npx jest webhook` runs the webhook group plus any matched webhook spec of another group.
//
// Two groups are left out of a run that matched every group (`npm test`) unless TEST_ALL is set
// (`npm run test:all`, which CI runs): long-running.e2e-spec.ts (specs that wait on the wall clock, child
// processes or data at scale, about 2.5 minutes) and pgbouncer.e2e-spec.ts (core specs again behind a
// PgBouncer, which needs the pgbouncer program installed). Named on its own either runs: `npx jest
// long-running`, `npx jest pgbouncer`, or one of their specs by path.
// Plain CommonJS: Jest requires this file as it is, before any transform.
const { readFileSync, readdirSync } = require('node:fs');
const { dirname, join, resolve } = require('node:path');

const GROUPS_DIR = resolve(__dirname, '..', 'groups');
const EXTENDED_GROUPS = ['long-running.e2e-spec.ts', 'pgbouncer.e2e-spec.ts'].map((name) => join(GROUPS_DIR, name));

const isGroup = (path) => dirname(path) === GROUPS_DIR;

/** The spec files a group imports (`import '../usage.e2e-spec';`), as absolute paths. */
function importedSpecs(groupPath) {
  const source = readFileSync(groupPath, 'utf8');
  return [...source.matchAll(/^import\s+'(\.{1,2}\/[^']+\.e2e-spec)';/gm)].map((m) => resolve(dirname(groupPath), `${m[1]}.ts`));
}

/** Whether the extended groups are left out of a run that matched `testPaths`. */
function leavesOutExtended(testPaths, env = process.env) {
  if (env.TEST_ALL) return false;
  const groups = readdirSync(GROUPS_DIR).map((name) => join(GROUPS_DIR, name));
  return groups.every((group) => testPaths.includes(group));
}

/** Jest calls it with the matched paths; the tests pass their own environment and log. */
async function filter(testPaths, env = process.env, log = (line) => process.stderr.write(`${line}\n`)) {
  let paths = testPaths;
  if (leavesOutExtended(testPaths, env)) {
    // The extended groups' own specs; one that a group of npm test imports too stays, in that group.
    const kept = new Set(paths.filter((path) => isGroup(path) && !EXTENDED_GROUPS.includes(path)).flatMap(importedSpecs));
    const extended = new Set([...EXTENDED_GROUPS, ...EXTENDED_GROUPS.flatMap(importedSpecs).filter((path) => !kept.has(path))]);
    paths = paths.filter((path) => !extended.has(path));
    log('Left out: the long-running and PgBouncer groups (test/groups/long-running.e2e-spec.ts, pgbouncer.e2e-spec.ts); `npm run test:all` runs them too.');
  }
  const inMatchedGroups = new Set(paths.filter(isGroup).flatMap(importedSpecs));
  return { filtered: paths.filter((path) => !inMatchedGroups.has(path)) };
}

module.exports = filter;
module.exports.GROUPS_DIR = GROUPS_DIR;
module.exports.EXTENDED_GROUPS = EXTENDED_GROUPS;
module.exports.importedSpecs = importedSpecs;
