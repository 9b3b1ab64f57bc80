#!/usr/bin/env node
// Runs the README's "A 60-second tour" exactly as written, so that it cannot go stale: every command of its
// ```bash blocks, in order, in one bash session, and every `# → …` line checked against the output of the
// command above it (`…` stands for anything). `npm start` runs in the background (as in a first terminal)
// until the service is healthy, and is stopped at the end.
//
// Differences from a newcomer's terminal, and why: the service listens on a free port instead of 3000 (the
// tour's `localhost:3000` is rewritten to it), and DATA_DIR is a temp folder (a developer's own .data is left
// alone). EMBEDDED_POSTGRES_PORT is given to `npm start` only: the CLI has to find the database by itself.
//   node .ci/tour.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[2] === '--check') {
  // node tour.mjs --check <output> <expected>: exit 0 when the output matches the `# →` line.
  const [, , , output, expected] = process.argv;
  const pattern = expected.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*');
  process.exit(new RegExp(`^${pattern}$`, 's').test(output.trim()) ? 0 : 1);
}

/** The tour's steps: commands (continuation lines joined) and the `# →` expectation that follows each. */
function tourSteps(readme) {
  const section = readme.split(/^## A 60-second tour$/m)[1]?.split(/^## /m)[0];
  if (!section) throw new Error('README.md has no "## A 60-second tour" section');
  const blocks = [...section.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  const steps = [];
  for (const block of blocks) {
    const lines = block.split('\n');
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i];
      const expectation = /^# → (.*)$/.exec(line);
      if (expectation) {
        steps[steps.length - 1].expect = expectation[1];
        continue;
      }
      if (!line.trim() || line.trimStart().startsWith('#')) continue;
      while (line.endsWith('\\')) line = `${line}\n${lines[++i]}`;
      steps.push({ command: line });
    }
  }
  return steps;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const steps = tourSteps(readFileSync(join(root, 'README.md'), 'utf8'));
const port = await freePort();
const pgPort = await freePort();
const work = mkdtempSync(join(tmpdir(), 'billing-tour-'));
const local = (text) => text.replaceAll('localhost:3000', `localhost:${port}`);
const quote = (text) => `'${text.replaceAll("'", `'\\''`)}'`;

const script = [
  'set -euo pipefail',
  `export DATA_DIR=${quote(join(work, 'data'))} PORT=${port}`,
  `log=${quote(join(work, 'start.log'))}`,
  'server=""',
  // As Ctrl-C in the first terminal would: the whole group (npm and node), then wait for the embedded database.
  'stop_server() { if [ -n "$server" ]; then kill -TERM -- "-$server" 2>/dev/null || true; for _ in $(seq 1 30); do kill -0 -- "-$server" 2>/dev/null || break; sleep 1; done; fi; }',
  'trap stop_server EXIT',
  'start_server() {',
  `  setsid env EMBEDDED_POSTGRES_PORT=${pgPort} npm start >"$log" 2>&1 &`,
  '  server=$!',
  '  for _ in $(seq 1 180); do',
  `    curl -fs http://127.0.0.1:${port}/api/health >/dev/null 2>&1 && { echo "(npm start: healthy; its output:)"; sed 's/^/  | /' "$log"; return 0; }`,
  '    kill -0 "$server" 2>/dev/null || break',
  '    sleep 1',
  '  done',
  '  echo "npm start did not become healthy:"; cat "$log"; return 1',
  '}',
  `cd ${quote(root)}`,
];
steps.forEach(({ command, expect }, n) => {
  script.push(`echo ${quote(`$ ${command}`)}`);
  if (/^npm start\b/.test(command)) {
    script.push('start_server');
  } else if (expect === undefined) {
    script.push(local(command));
  } else {
    script.push(`out=$(${local(command)})`, 'printf "%s\\n" "$out"');
    script.push(
      `node ${quote(fileURLToPath(import.meta.url))} --check "$out" ${quote(local(expect))} || ` +
        `{ echo ${quote(`tour: step ${n + 1}: the output does not match "# → ${expect}"`)}; exit 1; }`,
    );
  }
});
writeFileSync(join(work, 'tour.sh'), `${script.join('\n')}\n`);

const checks = steps.filter((s) => s.expect !== undefined).length;
if (steps.length < 8 || checks < 4 || !steps.some((s) => /^npm start\b/.test(s.command))) {
  throw new Error(`the tour looks truncated: ${steps.length} commands, ${checks} checked outputs`);
}
const run = spawnSync('bash', [join(work, 'tour.sh')], { stdio: 'inherit', env: { ...process.env, DATABASE_URL: '' } });
// The embedded database must have stopped with the service (nothing of the tour left running).
const leftover = spawnSync('pgrep', ['-f', `postgres -D ${join(work, 'data')}`]).status === 0;
if (run.status === 0 && !leftover) {
  rmSync(work, { recursive: true, force: true });
  console.log(`tour: ${steps.length} commands ran, ${checks} outputs matched the README`);
} else {
  if (leftover) console.log(`tour: the embedded PostgreSQL of ${work} was left running`);
  console.log(`tour: failed (its files are in ${work})`);
  process.exit(1);
}
