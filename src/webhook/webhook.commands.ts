import { CliCommand } from '../cli/cli-command';

/** events:list and events:replay (the webhook event ledger). */
export const webhookCommands: Record<string, CliCommand> = {};
