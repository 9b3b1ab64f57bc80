import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { parseArgv } from './cli-command';
import { COMMANDS, runCommandLine } from './cli';

// The operator CLI: `npm run -s cli -- <command> [--flag value]…`. Everything but the process is in cli.ts.
if (existsSync('.env') && COMMANDS[parseArgv(process.argv.slice(2)).command ?? '']) process.loadEnvFile('.env');

runCommandLine(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
