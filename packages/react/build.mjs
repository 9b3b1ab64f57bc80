// Builds the components with the repository's TypeScript into dist/ (ES modules with declarations; React and
// the client stay imports). Runs as the package's `prepare` (on `npm install` in the repository, after the
// client's, which it imports) and as `npm run -w packages/react build`.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch {
  console.error(`The components are built with the TypeScript of their repository: run \`npm install\` in ${join(here, '..', '..')} first.`);
  process.exit(1);
}
rmSync(join(here, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { stdio: 'inherit' });
