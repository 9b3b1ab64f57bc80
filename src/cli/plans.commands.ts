import { setTimeout as sleep } from 'node:timers/promises';
import { PlanMigrationsService } from '../licensing/plan-migrations.service';
import { PlansService } from '../licensing/plans.service';
import { cliActor, CliCommand, CliFailure, integerFlag, oneOfFlag, requireFlag } from './cli-command';

const VERSION = { min: 1, max: 2_147_483_647 };
/** How often the command reads the migration while it waits for its end. */
const POLL_MS = 1000;

/**
 * plans:versions and plans:migrate (spec §17): the tiers' plan versions with their live subscriptions, as
 * `GET /api/admin/plans` answers them; with --preview, what moving a tier's subscriptions to a newer version would
 * change (the preview's summary, as `POST /api/admin/plans/{tier}/migrations/preview` answers it, with its first
 * organisations), changing nothing; without it, the migration itself (`POST /api/admin/plans/{tier}/migrations`,
 * audited as the CLI's operator), waited for and printed as it ended. The service's instances run it (the job
 * queue): the command only starts it and reads it. Exit 1 when it ended with subscriptions not moved (status
 * failed: the state is still printed on stdout).
 */
export const planCommands: Record<string, CliCommand> = {
  'plans:versions': {
    usage: 'plans:versions',
    run: (app) => app!.get(PlansService).list(),
  },
  'plans:migrate': {
    usage: 'plans:migrate --tier T [--to V] [--from V] [--at now|period_end] [--preview]',
    async run(app, flags) {
      const tier = requireFlag(flags, 'tier');
      const to = integerFlag(flags, 'to', VERSION, '--to must be a version number (a whole number from 1)');
      const from = integerFlag(flags, 'from', VERSION, '--from must be a version number (a whole number from 1)');
      const at = oneOfFlag(flags, 'at', ['now', 'period_end']) ?? 'period_end';
      const versions = { ...(from === undefined ? {} : { from_version: from }), ...(to === undefined ? {} : { to_version: to }) };
      if (flags.preview === true) {
        const preview = await app!.get(PlansService).preview(tier, versions, { limit: 20, startingAfter: null });
        return { subscriptions: preview.subscriptions, summary: preview.summary, first: preview.data, has_more: preview.has_more };
      }
      const migrations = app!.get(PlanMigrationsService);
      let migration = await migrations.start(tier, { ...versions, at }, cliActor());
      while (migration.status === 'running') {
        await sleep(POLL_MS);
        migration = await migrations.get(migration.id);
      }
      if (migration.status === 'failed') throw new CliFailure(`${migration.failed} of ${migration.total} subscription(s) were not moved (see errors)`, migration);
      return migration;
    },
  },
};
