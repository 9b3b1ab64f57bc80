import { AuditService } from '../audit/audit.service';
import { CreditJobs } from '../credits/credit-jobs';
import { UUID } from '../identity/identity.service';
import { SandboxDelivery } from '../sandbox/sandbox-delivery';
import { SandboxSubscriptions } from '../sandbox/sandbox-subscriptions';
import { SandboxStore } from '../sandbox/sandbox.store';
import { cliActor, CliCommand, CliUsageError, integerFlag, optionalFlag, requireFlag } from './cli-command';
import { webhookUrlFlag } from './webhook-trigger.command';

const MAX_DAYS = 3660;
const iso = (unixSeconds: number) => new Date(unixSeconds * 1000).toISOString();

/**
 * sandbox:advance: the sandbox's test clock (spec §11.6). Moves the clock of the organisation's sandbox
 * subscription forward and delivers what happened meanwhile (renewals, a trial's end, scheduled changes,
 * cancellations), as signed events, in order, to the running service, found as webhook:trigger finds it.
 * Audited as the operator, in the transaction of the move. `--days 0` moves nothing and delivers what a failed
 * run left pending. Then the organisation's credits catch up with the clock (spec §16.6): the rollovers of the
 * period it is in, grants started by then in effect, grants expired by then written off (CreditJobs.bringToClock;
 * docs/decisions.md).
 */
export const sandboxCommands: Record<string, CliCommand> = {
  'sandbox:advance': {
    usage: 'sandbox:advance --org ID --days N [--url URL]',
    async run(app, flags, _args, config) {
      const org = requireFlag(flags, 'org');
      if (!UUID.test(org)) throw new CliUsageError('--org must be a UUID');
      requireFlag(flags, 'days');
      const days = integerFlag(flags, 'days', { min: 0, max: MAX_DAYS }, `--days must be a whole number from 0 to ${MAX_DAYS}`)!;
      const url = webhookUrlFlag(optionalFlag(flags, 'url'), config);
      if (config.provider !== 'sandbox') throw new Error('sandbox:advance works in sandbox mode only (PAYPROVIDER_SECRET_KEY set: the provider has its own test clocks)');

      const sub = await app!.get(SandboxStore).subscriptionOf(org);
      if (!sub) throw new Error(`organisation ${org} has no sandbox subscription (buy one through checkout first)`);
      const audit = app!.get(AuditService);
      const moved = await app!.get(SandboxSubscriptions).advance(sub.id, sub.id, days * 86_400, (m, before, after) =>
        audit.record(m, cliActor(), {
          action: 'sandbox.clock_advanced',
          organisationId: org,
          before: { subscription_id: sub.id, ...before },
          after: { subscription_id: sub.id, days, ...after },
        }),
      );
      const delivered: { id: string; type: string }[] = [];
      const outcome = await app!.get(SandboxDelivery).deliverPending(sub.id, url, (e) => delivered.push({ id: e.id, type: e.payload.type }));
      const summary = {
        organisation_id: org,
        subscription_id: sub.id,
        clock: iso(moved.result.to),
        status: moved.subscription.status,
        current_period_end: iso(moved.subscription.items.data[0].current_period_end),
        events: delivered,
      };
      if (!outcome.ok) {
        // The clock has moved; what was not delivered stays pending, in order, for `--days 0` (or provider:sync).
        throw new Error(`the clock moved, but not every event was delivered: ${outcome.error}; ${JSON.stringify(summary)}; run with --days 0 to deliver the rest`);
      }
      // After the events: the service knows the period the clock is in.
      const credits = await app!.get(CreditJobs).bringToClock(org, new Date(moved.result.to * 1000));
      return { ...summary, credits };
    },
  },
};
