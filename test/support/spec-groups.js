// Jest's `filter` (jest.config.js), so that every matched test runs once. The end-to-end specs are grouped for
// speed: test/groups/<area>.e2e-spec.ts imports the spec files of its area, so the app's modules load once per
// group. Of the files a command matched, a spec that a matched group imports is left to that group:
// `npm test` (everything matched) runs the groups, `npx jest test/usage.e2e-spec.ts` runs that file alone, and
// `npx jest webhook` runs the webhook group plus any matched webhook spec of another group.
// Plain CommonJS: Jest requires this file as it is, before any transform.
const { readFileSync } = require('node:fs');
const { dirname, resolve } = require('node:path');

const GROUPS_DIR = resolve(__dirname, '..', 'groups');

const isGroup = (path) => dirname(path) === GROUPS_DIR;

/** The spec files a group imports (`import '../usage.e2e-spec';`), as absolute paths. */
function importedSpecs(groupPath) {
  const source = readFileSync(groupPath, 'utf8');
  return [...source.matchAll(/^import\s+'(\.{1,2}\/[^']+\.e2e-spec)';/gm)].map((m) => resolve(dirname(groupPath), `${m[1]}.ts`));
}

async function filter(testPaths) {
  const inMatchedGroups = new Set(testPaths.filter(isGroup).flatMap(importedSpecs));
  return { filtered: testPaths.filter((path) => !inMatchedGroups.has(path)) };
}

module.exports = filter;
module.exports.GROUPS_DIR = GROUPS_DIR;
module.exports.importedSpecs = importedSpecs;
