import { formatDate, formatDateTime, formatNumber } from '../common/display-format';
import type { ExplainResponse, ExplainStep } from '../licensing/explain.dto';

/*
 * What the console's pages say in words for support staff: who made a change, what a change changed, and why an
 * organisation has its license, as sentences. Pure functions of the data the pages read; every number, amount
 * and time through common/display-format.ts.
 */

/** Who made a change: the words, and the id behind them when the words are not the id (kept copyable). */
export interface ActorText {
  text: string;
  id: string | null;
}

/**
 * An audit actor (`operator:<email>`, `user:<id>`, `service_key:<name>`, `cli:<os user>`) for a person: a user's
 * email where it is known (`emails`, user id → email).
 */
export function actorText(actor: string, emails: ReadonlyMap<string, string>): ActorText {
  const colon = actor.indexOf(':');
  const kind = colon < 0 ? actor : actor.slice(0, colon);
  const who = colon < 0 ? '' : actor.slice(colon + 1);
  switch (kind) {
    case 'operator':
      return { text: who, id: null };
    case 'user':
      return { text: emails.get(who) ?? 'a deleted user', id: who };
    case 'service_key':
      return { text: `service key “${who}”`, id: null };
    case 'cli':
      return { text: `the CLI (${who})`, id: null };
    default:
      return { text: actor, id: null };
  }
}

/** One field an audited change changed: its value before and after (null: it was not there). */
export interface FieldChange {
  field: string;
  before: string | null;
  after: string | null;
}

/**
 * The fields an audit entry's change changed, before → after, in words; fields that kept their value are left out.
 * A created thing (no `before`) lists what it was created with; a deleted one what it had.
 */
export function auditChanges(before: Record<string, unknown> | null, after: Record<string, unknown> | null): FieldChange[] {
  const fields = [...new Set([...Object.keys(after ?? {}), ...Object.keys(before ?? {})])];
  return fields
    .filter((field) => !before || !after || !(field in before) || !(field in after) || JSON.stringify(before[field]) !== JSON.stringify(after[field]))
    .map((field) => ({
      field,
      before: before && field in before ? valueText(field, before[field]) : null,
      after: after && field in after ? valueText(field, after[field]) : null,
    }));
}

// Fields that hold a time as Unix seconds (the provider's), shown as one.
const TIME_FIELD = /(^|_)(at|clock|since|start|end|created)$/;

/** A stored value in words: times as times, numbers with separators, nothing as "none". */
export function valueText(field: string, value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'number') return TIME_FIELD.test(field) && value > 1e9 ? formatDateTime(value) : formatNumber(value);
  if (typeof value === 'string') return /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(value) ? formatDateTime(value) : value;
  return JSON.stringify(value);
}

/** A step of the license's timeline: when (if it has a time), the sentence, and the record it rests on. */
export interface TimelineStep {
  when: string | null;
  text: string;
  link: { href: string; label: string } | null;
}

/** What the timeline needs besides the explanation: the subscriptions' periods, and who set each override. */
export interface TimelineContext {
  /** By subscription id: when its period ends, and whether it ends then. */
  periods: ReadonlyMap<string, { currentPeriodEnd: number | null; cancelAtPeriodEnd: boolean }>;
  /** By override name: the audit entry that set its current value, and who made it (in words). */
  overrideEntries: ReadonlyMap<string, { id: string; by: string }>;
}

const EVENT_WORDS: Record<string, string> = {
  'customer.subscription.created': 'subscription created',
  'customer.subscription.updated': 'subscription updated',
  'customer.subscription.deleted': 'subscription deleted',
  'customer.subscription.trial_will_end': 'trial ending soon',
  'customer.subscription.paused': 'subscription paused',
  'customer.subscription.resumed': 'subscription resumed',
  'invoice.paid': 'invoice paid',
  'invoice.payment_succeeded': 'invoice paid',
  'invoice.payment_failed': 'payment failed',
  'subscription_schedule.created': 'change scheduled',
  'subscription_schedule.updated': 'scheduled change updated',
  'subscription_schedule.released': 'scheduled change released',
  'subscription_schedule.canceled': 'scheduled change canceled',
  'customer.deleted': 'customer deleted',
};

const OUTCOME_WORDS: Record<string, string> = {
  processed: 'applied',
  duplicate: 'a duplicate, not applied again',
  stale: 'older than one already applied, not applied',
  unmatched: 'matched no organisation',
  ignored: 'nothing to apply',
  failed: 'failed',
};

const TIER_SOURCE_WORDS: Record<string, string> = {
  configured_price: 'a configured price',
  price_metadata: "the price's metadata",
  lookup_key: "the price's lookup key",
  subscription_metadata: "the subscription's metadata",
};

const NOT_CHOSEN_WORDS: Record<string, string> = {
  deleted: 'it was deleted',
  no_tier: 'no event named a tier of ours',
  no_status: 'its status is not known',
  incomplete: 'its first payment is pending',
  not_live: 'the chosen one is live and this one is not',
  lower_tier: 'the chosen one is of a higher tier',
  older: 'the chosen one has newer events',
  tie: 'equal on every rule; the other was taken',
};

/** A webhook event's type in words (`invoice.payment_succeeded` → "invoice paid"); an unknown one as it is. */
export function eventWords(type: string): string {
  return EVENT_WORDS[type] ?? type;
}

/** Why the organisation has its license, newest first, one sentence per step of the explanation. */
export function explainTimeline(explain: ExplainResponse, context: TimelineContext): TimelineStep[] {
  return explain.because.map((step) => stepText(step, context));
}

function subscriptionLink(id: string) {
  return { href: `#sub-${id}`, label: `subscription ${id}` };
}

function stepText(step: ExplainStep, context: TimelineContext): TimelineStep {
  switch (step.kind) {
    case 'override': {
      const set = context.overrideEntries.get(step.name);
      const value = typeof step.value === 'boolean' ? `${step.name} ${step.value ? 'on' : 'off'}` : `${step.name} limit ${formatNumber(step.value)}`;
      const by = set ? `, by ${set.by}` : '';
      const until = step.expires_at ? `, until ${formatDate(step.expires_at)}` : ', with no end';
      const note = step.note ? ` (“${step.note}”)` : '';
      return { when: formatDate(step.created_at), text: `Override: ${value}${by}${until}${note}.`, link: set ? { href: `/console/audit/${set.id}`, label: `audit entry ${set.id}` } : null };
    }
    case 'grace': {
      const since = step.past_due_since === null ? 'past due' : `past due since ${formatDate(step.past_due_since)}`;
      const ends = step.ends_at === null ? '' : step.in_grace ? `; grace lasts until ${formatDate(step.ends_at)}` : `; grace ended on ${formatDate(step.ends_at)}`;
      const so = step.in_grace ? 'so the paid tier still applies' : 'so the free tier applies';
      return { when: step.past_due_since === null ? null : formatDate(step.past_due_since), text: `Payment overdue: ${since}${ends}, ${so}.`, link: subscriptionLink(step.subscription_id) };
    }
    case 'subscription': {
      const period = context.periods.get(step.id);
      const end = period?.currentPeriodEnd ? ` ${period.cancelAtPeriodEnd ? 'until' : 'renewing'} ${formatDate(period.currentPeriodEnd)}` : '';
      const source = step.tier_source ? ` (tier from ${TIER_SOURCE_WORDS[step.tier_source] ?? step.tier_source})` : '';
      return { when: null, text: `The license follows this subscription: ${step.tier} ${words(step.status)}${end}${source}.`, link: subscriptionLink(step.id) };
    }
    case 'event': {
      const why = step.reason ? `: ${step.reason}` : '';
      return { when: formatDateTime(step.created), text: `${capitalise(eventWords(step.type))} → ${OUTCOME_WORDS[step.outcome] ?? step.outcome}${why}.`, link: { href: `/console/events/${encodeURIComponent(step.id)}`, label: `event ${step.id}` } };
    }
    case 'no_subscription':
      return { when: null, text: `${capitalise(step.reason)}.`, link: null };
    case 'not_chosen':
      return {
        when: null,
        text: `Not followed: ${step.tier ?? 'no tier'} ${step.status ? words(step.status) : 'of unknown status'}, because ${NOT_CHOSEN_WORDS[step.reason] ?? step.reason}.`,
        link: subscriptionLink(step.id),
      };
  }
}

/** A provider status in words: `past_due` → "past due". */
function words(status: string): string {
  return status.replace(/_/g, ' ');
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
