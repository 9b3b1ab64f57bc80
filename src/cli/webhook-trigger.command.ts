import { CliCommand } from './cli-command';

/** webhook:trigger: sends a signed event to a running service (see the sandbox provider). */
export const webhookTriggerCommands: Record<string, CliCommand> = {};
