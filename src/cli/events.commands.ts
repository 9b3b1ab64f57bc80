import { DataSource } from 'typeorm';
import { EventDispatcher } from '../webhook/event-dispatcher';
import { listEvents } from '../webhook/webhook-ledger.repository';
import { EVENT_RETENTION_DAYS, ProviderSync } from '../webhook/provider-sync';
import { LEDGER_STATUSES, LedgerStatus } from '../provider/provider-event';
import { cliActor, CliCommand, integerFlag, limitFlag, oneOfFlag, requireFlag } from './cli-command';

/** events:list and events:replay (the webhook event ledger), provider:sync (the reconciliation). */
export const eventCommands: Record<string, CliCommand> = {
  'events:list': {
    usage: `events:list [--status ${LEDGER_STATUSES.join('|')}] [--limit N]`,
    async run(app, flags) {
      const status = oneOfFlag<LedgerStatus>(flags, 'status', LEDGER_STATUSES);
      const entries = await listEvents(app!.get(DataSource).manager, status, limitFlag(flags));
      const data = entries.map(({ organisationId, customerId, subscriptionId, receivedAt, processedAt, ...rest }) => ({
        ...rest,
        organisation_id: organisationId,
        customer_id: customerId,
        subscription_id: subscriptionId,
        received_at: receivedAt,
        processed_at: processedAt,
      }));
      return { data };
    },
  },
  'events:replay': {
    usage: 'events:replay --id EVENT_ID',
    async run(app, flags) {
      const { id, status, reason } = await app!.get(EventDispatcher).replay(requireFlag(flags, 'id'), cliActor());
      return { id, status, reason };
    },
  },
  'provider:sync': {
    usage: `provider:sync [--since DAYS]`,
    async run(app, flags) {
      const since =
        integerFlag(flags, 'since', { min: 1, max: EVENT_RETENTION_DAYS },
          `--since must be a whole number of days from 1 to ${EVENT_RETENTION_DAYS} (the provider keeps ${EVENT_RETENTION_DAYS})`) ??
        EVENT_RETENTION_DAYS;
      // A provider that cannot be reached throws: non-zero exit, what was applied stays applied.
      return app!.get(ProviderSync).run(since, cliActor().actor);
    },
  },
};
