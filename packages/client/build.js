// Builds the client twice from one source, so a web app can `import` it (ES modules) or `require` it
// (CommonJS), with declarations for both: dist/esm and dist/cjs, each marked with its module type. Runs as
// the package's `prepare`: on `npm install` in the repository, and in a web app's `npm install <path>`.
const { execFileSync } = require('node:child_process');
const { rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc', { paths: [__dirname] });
} catch {
  // A web app installing the client by path before the repository's own dependencies are installed.
  console.error(`The client is built with the TypeScript of its repository: run \`npm install\` in ${join(__dirname, '..', '..')} first.`);
  process.exit(1);
}
rmSync(join(__dirname, 'dist'), { recursive: true, force: true });
for (const [format, type] of [['esm', 'module'], ['cjs', 'commonjs']]) {
  execFileSync(process.execPath, [tsc, '-p', join(__dirname, `tsconfig.${format}.json`)], { stdio: 'inherit' });
  writeFileSync(join(__dirname, 'dist', format, 'package.json'), `${JSON.stringify({ type })}\n`);
}
