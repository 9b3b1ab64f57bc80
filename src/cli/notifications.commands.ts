import { NotificationOutbox } from '../notifications/notification-outbox.service';
import { DELIVERY_STATUSES, DeliveryStatus } from '../notifications/notification-delivery.entity';
import { CliCommand, CliUsageError, optionalFlag, requireFlag } from './cli-command';

/** notifications:list and notifications:retry: the outbox of messages to the web app (SPEC 10). */
export const notificationCommands: Record<string, CliCommand> = {
  'notifications:list': {
    usage: `notifications:list [--status ${DELIVERY_STATUSES.join('|')}] [--limit N]`,
    async run(app, flags) {
      const status = optionalFlag(flags, 'status') as DeliveryStatus | undefined;
      if (status !== undefined && !DELIVERY_STATUSES.includes(status)) {
        throw new CliUsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}`);
      }
      const limitFlag = optionalFlag(flags, 'limit') ?? '50';
      if (!/^[1-9]\d{0,3}$/.test(limitFlag) || Number(limitFlag) > 1000) {
        throw new CliUsageError('--limit must be a whole number from 1 to 1000');
      }
      return { data: await app!.get(NotificationOutbox).list(status, Number(limitFlag)) };
    },
  },
  'notifications:retry': {
    usage: 'notifications:retry --id WEBHOOK_ID',
    async run(app, flags) {
      // A running service delivers them at once; with none running, the next one to start does.
      return app!.get(NotificationOutbox).retry(requireFlag(flags, 'id'));
    },
  },
};
