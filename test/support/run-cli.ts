import { INestApplicationContext } from '@nestjs/common';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommandLine } from '../../src/cli/cli';

export const ROOT = join(__dirname, '..', '..');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

type Env = Record<string, string | undefined>;

/**
 * Runs one command line of the operator CLI in this process: the same code as `npm run cli` (argument
 * parsing, configuration from `env`, output and exit code), without paying a process start per command.
 * The commands run on their own application context opened from `env`, as the CLI does, or on `opts.app`
 * (a test app on the same database and configuration), which saves opening one per command.
 * runCli below is the real process, for what only it can show.
 */
export async function cli(args: string[], env: Env, opts: { app?: INestApplicationContext } = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCommandLine(args, {
    env: { NODE_ENV: 'test', LOG_LEVEL: 'silent', DATA_DIR: mkdtempSync(join(tmpdir(), 'billing-cli-')), ...env },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    open: opts.app ? async () => ({ app: opts.app!, close: async () => undefined }) : undefined,
  });
  return { code, stdout, stderr, json: parse(stdout) };
}

/** Runs the built operator CLI (`npm test` builds first) as a separate process; `nodeArgs` go to node. */
export function runCli(args: string[], env: Env, opts: { cwd?: string; nodeArgs?: string[] } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), join(ROOT, 'dist', 'src', 'cli', 'main.js'), ...args], {
      cwd: opts.cwd ?? ROOT,
      env: { PATH: process.env.PATH, NODE_ENV: 'test', LOG_LEVEL: 'silent', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, json: parse(stdout) }));
  });
}

function parse(stdout: string): unknown {
  try {
    return JSON.parse(stdout);
  } catch {
    return undefined;
  }
}
