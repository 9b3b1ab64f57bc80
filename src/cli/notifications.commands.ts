import { NotificationOutbox } from '../notifications/notification-outbox';
import { DELIVERY_STATUSES, DeliveryStatus } from '../notifications/notification-delivery.entity';
import { cliActor, CliCommand, limitFlag, oneOfFlag, requireFlag } from './cli-command';

/** notifications:list and notifications:retry: the outbox of messages to the web app (spec §10). */
export const notificationCommands: Record<string, CliCommand> = {
  'notifications:list': {
    usage: `notifications:list [--status ${DELIVERY_STATUSES.join('|')}] [--limit N]`,
    async run(app, flags) {
      const status = oneOfFlag<DeliveryStatus>(flags, 'status', DELIVERY_STATUSES);
      return { data: await app!.get(NotificationOutbox).list(status, limitFlag(flags)) };
    },
  },
  'notifications:retry': {
    usage: 'notifications:retry --id WEBHOOK_ID',
    async run(app, flags) {
      // A running service delivers them at once; with none running, the next one to start does.
      return app!.get(NotificationOutbox).retry(requireFlag(flags, 'id'), cliActor());
    },
  },
};
