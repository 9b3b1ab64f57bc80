import { EVENT_TYPES as TYPES } from '../provider/provider-event';
import type { AppConfig } from '../config/app-config';
import { isPaidTier, paidTiers } from '../config/tiers';
import { UUID } from '../identity/identity.service';
import {
  addMonth,
  eventEnvelope,
  invoiceObject,
  nowSeconds,
  periodLine,
  SANDBOX_CURRENCY,
  postSignedEvent,
  randomId,
  subscriptionObject,
  SubscriptionState,
} from '../sandbox/provider-events';
import { CliCommand, CliUsageError, optionalFlag, requireFlag } from './cli-command';

// The events a checkout, the portal and a renewal send (what the sandbox sends too).
const EVENT_TYPES: string[] = [
  TYPES.subscriptionCreated,
  TYPES.subscriptionUpdated,
  TYPES.subscriptionDeleted,
  TYPES.invoicePaymentSucceeded,
  TYPES.invoicePaid,
];

/**
 * Builds one event for an organisation. Customer and subscription ids are derived from the organisation
 * id, so that created → updated → deleted (and invoices) all name the same subscription.
 */
export function triggerEvent(type: string, organisationId: string, tier: string) {
  const key = organisationId.replace(/-/g, '').toLowerCase();
  const now = nowSeconds();
  const metadata = { organisation_id: organisationId, tier };
  const plan = { tier, interval: 'month' as const, quantity: 1 };
  const sub: SubscriptionState = {
    id: `sub_trigger_${key}`,
    customerId: `cus_trigger_${key}`,
    itemId: `si_trigger_${key}`,
    currency: SANDBOX_CURRENCY,
    ...plan,
    status: type === TYPES.subscriptionDeleted ? 'canceled' : 'active',
    metadata,
    created: now,
    periodStart: now,
    periodEnd: addMonth(now),
    canceledAt: type === TYPES.subscriptionDeleted ? now : null,
    trialStart: null,
    trialEnd: null,
    cancelAtPeriodEnd: false,
    defaultPaymentMethod: `pm_trigger_${key}`,
    missingPaymentMethod: 'create_invoice',
    scheduleId: null,
  };
  if (type !== TYPES.invoicePaymentSucceeded && type !== TYPES.invoicePaid) return eventEnvelope(type, subscriptionObject(sub), now);
  const line = periodLine(plan, sub.periodStart, sub.periodEnd);
  const invoice = invoiceObject({
    id: randomId('in_trigger_'),
    customerId: sub.customerId,
    subscriptionId: sub.id,
    subscriptionMetadata: metadata,
    itemId: sub.itemId,
    billingReason: 'subscription_create',
    lines: [line],
    amountPaid: line.amount,
    periodStart: sub.periodStart,
    periodEnd: sub.periodEnd,
    paidAt: now,
    hostedInvoiceUrl: null,
  });
  return eventEnvelope(type, invoice, now);
}

/** Where a running service takes webhooks: `--url`, else its own endpoint on this machine at PORT. */
export function webhookUrlFlag(value: string | undefined, config: AppConfig): string {
  const url = value ?? `http://127.0.0.1:${config.port}/api/webhooks/payprovider`;
  if (!/^https?:\/\/[^\s]+$/.test(url) || !URL.canParse(url)) throw new CliUsageError('--url must be an http(s) URL');
  return url;
}

/** webhook:trigger: sends a signed event to a running service, like the provider's own CLI. */
export const webhookTriggerCommands: Record<string, CliCommand> = {
  'webhook:trigger': {
    usage: `webhook:trigger <${EVENT_TYPES.join('|')}> --org ID [--tier TIER] [--url URL]`,
    needsDatabase: false,
    async run(_app, flags, args, config) {
      const [type] = args;
      if (!type || !EVENT_TYPES.includes(type)) throw new CliUsageError(`event type must be one of ${EVENT_TYPES.join(', ')}`);
      const org = requireFlag(flags, 'org');
      if (!UUID.test(org)) throw new CliUsageError('--org must be a UUID');
      const tier = optionalFlag(flags, 'tier') ?? 'pro';
      if (!isPaidTier(config.tiers, tier)) {
        throw new CliUsageError(`--tier must be a paid tier: ${paidTiers(config.tiers).join(', ')}`);
      }
      const url = webhookUrlFlag(optionalFlag(flags, 'url'), config);

      const event = triggerEvent(type, org, tier);
      let res;
      try {
        res = await postSignedEvent(url, JSON.stringify(event), config.webhookSecrets[0]);
      } catch (err) {
        throw new Error(`could not reach ${url}: ${(err as Error).cause ?? (err as Error).message}`, { cause: err });
      }
      const result = { id: event.id, type, status: res.status, response: parseBody(res.body) };
      if (res.status < 200 || res.status >= 300) throw new Error(`the service refused the event: ${JSON.stringify(result)}`);
      return result;
    },
  },
};

function parseBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}
