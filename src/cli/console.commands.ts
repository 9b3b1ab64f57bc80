import { ConsoleAuthService, DEFAULT_LINK_TTL_MINUTES, MAX_LINK_TTL_MINUTES } from '../console/console-auth.service';
import { CliCommand, CliUsageError, integerFlag, requireFlag } from './cli-command';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** console:link, the operator console's sign-in by one-time link (spec §14). */
export const consoleCommands: Record<string, CliCommand> = {
  'console:link': {
    usage: `console:link --email EMAIL [--ttl-minutes M]`,
    async run(app, flags) {
      const email = requireFlag(flags, 'email').trim();
      if (!EMAIL.test(email) || email.length > 320) throw new CliUsageError('--email must be an email address');
      const ttl =
        integerFlag(flags, 'ttl-minutes', { min: 1, max: MAX_LINK_TTL_MINUTES }, `--ttl-minutes must be a whole number from 1 to ${MAX_LINK_TTL_MINUTES}`) ??
        DEFAULT_LINK_TTL_MINUTES;
      const { url, expiresAt } = await app!.get(ConsoleAuthService).createLink(email, ttl);
      return { url, email, expires_at: expiresAt.toISOString() };
    },
  },
};
