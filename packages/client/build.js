// Builds the client twice from one source, so a web app can `import` it (ES modules) or `require` it
// (CommonJS), with declarations for both: dist/esm and dist/cjs, each marked with its module type.
const { execFileSync } = require('node:child_process');
const { rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const tsc = require.resolve('typescript/bin/tsc', { paths: [__dirname] });
rmSync(join(__dirname, 'dist'), { recursive: true, force: true });
for (const [format, type] of [['esm', 'module'], ['cjs', 'commonjs']]) {
  execFileSync(process.execPath, [tsc, '-p', join(__dirname, `tsconfig.${format}.json`)], { stdio: 'inherit' });
  writeFileSync(join(__dirname, 'dist', format, 'package.json'), `${JSON.stringify({ type })}\n`);
}
