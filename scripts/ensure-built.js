// Builds dist/ when it is missing or older than a source file, so `npm run cli` works on a fresh clone.
const { execSync } = require('node:child_process');
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const marker = join(root, 'dist', '.tsbuildinfo');

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

if (!existsSync(marker) || statSync(marker).mtimeMs < newest(join(root, 'src'))) {
  execSync('npx nest build', { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}
