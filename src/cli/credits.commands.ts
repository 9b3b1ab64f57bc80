import { randomUUID } from 'node:crypto';
import { AppException } from '../common/app-exception';
import { CreditsAdminService } from '../credits/credits-admin.service';
import { CreditsReadService } from '../credits/credits-read.service';
import { checkedGrantBody } from '../credits/credits-routes.dto';
import { UUID } from '../identity/identity.service';
import { cliActor, CliCommand, CliUsageError, Flags, optionalFlag, requireFlag } from './cli-command';

function orgFlag(flags: Flags): string {
  const org = requireFlag(flags, 'org');
  if (!UUID.test(org)) throw new CliUsageError('--org must be an organisation id (a UUID)');
  return org;
}

function asUsageError<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof AppException && err.code === 'validation_failed') throw new CliUsageError(err.message);
    throw err;
  }
}

/**
 * credits:grant and credits:list (spec §16.6): an operator's grant, through the admin route's one service (checked,
 * audited as `cli:<user>` in its transaction, its ledger entry naming the operator), and an organisation's credits
 * as the credits read shows them.
 */
export const creditCommands: Record<string, CliCommand> = {
  'credits:grant': {
    usage: 'credits:grant --org ID --metric M --amount N [--expires-at T] [--note S]',
    async run(app, flags) {
      const org = orgFlag(flags);
      const expiresAt = optionalFlag(flags, 'expires-at');
      const note = optionalFlag(flags, 'note');
      // The admin route's rules (GrantBody), once: a flag they refuse is a usage error (exit 2), nothing written.
      // Each run is a new grant: its own idempotency key.
      const body = asUsageError(() =>
        checkedGrantBody({
          metric: requireFlag(flags, 'metric'),
          amount: requireFlag(flags, 'amount'),
          idempotency_key: `cli-${randomUUID()}`,
          ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
          ...(note === undefined ? {} : { note }),
        }),
      );
      const { grant } = await app!.get(CreditsAdminService).grant(cliActor(), org, body);
      return grant;
    },
  },
  'credits:list': {
    usage: 'credits:list --org ID',
    async run(app, flags) {
      const org = orgFlag(flags);
      const reads = app!.get(CreditsReadService);
      const caller = { serviceKey: 'cli' };
      const { data } = await reads.credits(org, caller);
      const ledger = await reads.ledger(org, caller, { limit: 20 });
      return { data, ledger: ledger.data };
    },
  },
};
