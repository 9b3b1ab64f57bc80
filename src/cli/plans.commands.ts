import { PlansService } from '../licensing/plans.service';
import { CliCommand, CliUsageError, integerFlag, oneOfFlag, requireFlag } from './cli-command';

const VERSION = { min: 1, max: 2_147_483_647 };

/**
 * plans:versions and plans:migrate --preview (spec §17): the tiers' plan versions with their live subscriptions,
 * as `GET /api/admin/plans` answers them, and what moving a tier's subscriptions to a newer version would change
 * (the preview's summary, as `POST /api/admin/plans/{tier}/migrations/preview` answers it, with its first
 * organisations). Neither changes anything. The migration itself is not built yet (issue 41): without --preview the
 * command says so and does nothing.
 */
export const planCommands: Record<string, CliCommand> = {
  'plans:versions': {
    usage: 'plans:versions',
    run: (app) => app!.get(PlansService).list(),
  },
  'plans:migrate': {
    usage: 'plans:migrate --tier T [--to V] [--from V] [--at now|period_end] --preview',
    async run(app, flags) {
      const tier = requireFlag(flags, 'tier');
      const to = integerFlag(flags, 'to', VERSION, '--to must be a version number (a whole number from 1)');
      const from = integerFlag(flags, 'from', VERSION, '--from must be a version number (a whole number from 1)');
      oneOfFlag(flags, 'at', ['now', 'period_end']);
      if (flags.preview !== true) {
        throw new CliUsageError('only --preview is available: the migration itself (moving subscriptions) is not built yet');
      }
      const preview = await app!.get(PlansService).preview(
        tier,
        { ...(from === undefined ? {} : { from_version: from }), ...(to === undefined ? {} : { to_version: to }) },
        { limit: 20, startingAfter: null },
      );
      return { subscriptions: preview.subscriptions, summary: preview.summary, first: preview.data, has_more: preview.has_more };
    },
  },
};
