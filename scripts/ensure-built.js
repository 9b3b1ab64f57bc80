// Compiles src/ and ormconfig.ts into dist/ with tsc, but only when something the build reads is newer than
// the last build: `npm start`, `npm run cli` and `npm test` then start in a second when nothing changed.
// `--always` (npm run build) compiles regardless. tsc type-checks too, so a type error stops the start.
const { execFileSync } = require('node:child_process');
const { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } = require('node:fs');
const { join, relative } = require('node:path');

const root = join(__dirname, '..');
const dist = join(root, 'dist');
// Written after every successful build; its mtime is "when dist/ was last brought up to date".
const marker = join(dist, '.built');
const inputs = ['src', 'ormconfig.ts', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs; // a deleted or renamed file changes its directory's mtime
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

/** Compiled files whose source is gone (deleted or renamed): TypeORM would still load a stale migration or entity. */
function removeOrphans(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      removeOrphans(path);
      continue;
    }
    const source = join(root, relative(dist, path)).replace(/\.js(\.map)?$/, '.ts');
    if (/\.js(\.map)?$/.test(entry.name) && !existsSync(source)) rmSync(path);
  }
}

const always = process.argv.includes('--always');
const upToDate = existsSync(marker) && statSync(marker).mtimeMs >= Math.max(...inputs.map((i) => newest(join(root, i))));
if (always || !upToDate) {
  const started = new Date(); // a source saved while tsc runs is newer than the marker: built again next time
  if (!always) process.stderr.write('building (src/ changed since the last build)…\n');
  removeOrphans(join(dist, 'src'));
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } catch {
    process.stderr.write('build failed: fix the errors above (npm run build compiles again)\n');
    process.exit(1);
  }
  writeFileSync(marker, '');
  utimesSync(marker, started, started);
  if (!always) process.stderr.write(`built in ${((Date.now() - started.getTime()) / 1000).toFixed(1)} s\n`);
}
