import { isISO8601 } from 'class-validator';
import { randomUUID } from 'node:crypto';
import { ENTITLEMENT_NAME } from '../config/tiers';
import { CreditsAdminService } from '../credits/credits-admin.service';
import { CreditsReadService } from '../credits/credits-read.service';
import { MAX_GRANT_AMOUNT, MAX_NOTE_LENGTH } from '../credits/credits.service';
import { UUID } from '../identity/identity.service';
import { cliActor, CliCommand, CliUsageError, Flags, integerFlag, optionalFlag, requireFlag } from './cli-command';

function orgFlag(flags: Flags): string {
  const org = requireFlag(flags, 'org');
  if (!UUID.test(org)) throw new CliUsageError('--org must be an organisation id (a UUID)');
  return org;
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
      const metric = requireFlag(flags, 'metric');
      if (!ENTITLEMENT_NAME.test(metric)) throw new CliUsageError('--metric must be a metric name (lower-case letters, digits or _)');
      const amount = integerFlag(flags, 'amount', { min: 1, max: MAX_GRANT_AMOUNT }, `--amount must be a whole number from 1 to ${MAX_GRANT_AMOUNT}`);
      if (amount === undefined) throw new CliUsageError('--amount is required');
      const expiresAt = optionalFlag(flags, 'expires-at');
      if (expiresAt !== undefined && !isISO8601(expiresAt, { strict: true, strictSeparator: true })) {
        throw new CliUsageError('--expires-at must be an ISO 8601 date and time (2027-03-31T23:59:59Z)');
      }
      const note = optionalFlag(flags, 'note');
      if (note !== undefined && note.length > MAX_NOTE_LENGTH) throw new CliUsageError(`--note must be at most ${MAX_NOTE_LENGTH} characters`);
      // Each run is a new grant: its own idempotency key.
      const { grant } = await app!.get(CreditsAdminService).grant(cliActor(), org, {
        metric,
        amount,
        idempotency_key: `cli-${randomUUID()}`,
        ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
        ...(note === undefined ? {} : { note }),
      });
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
