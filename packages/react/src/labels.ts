/**
 * Every string the components show, replaceable for another language or another voice: pass a part of it as
 * `labels` to `BillingProvider` (every component) or to one component. Numbers, amounts and dates reach these
 * functions already formatted by `Intl` in the provider's `locale`.
 */
export interface Labels {
  loading: string;
  /** The heading of an error state. */
  errorTitle: string;
  /** The support reference under an error: the answer's `X-Request-Id`. */
  errorReference: (requestId: string) => string;
  retry: string;
  /** A tier's display name (default: the tier's name, first letter upper-cased). */
  tierName: (tier: string) => string;
  /** A feature's display name (default: `api_access` → "API access", `custom_reports` → "Custom reports"). */
  featureName: (feature: string) => string;
  /** A metric's display name (default: `ai_tokens` → "AI tokens", `seats_used` → "Seats used"). */
  metricName: (metric: string) => string;

  // PricingTable
  pricingTitle: string;
  billingPeriod: string;
  monthly: string;
  yearly: string;
  perInterval: (amount: string, interval: string, perSeat: boolean) => string;
  free: string;
  trialBadge: (days: number) => string;
  currentPlan: string;
  featuresHeading: string;
  limitsHeading: string;
  included: string;
  notIncluded: string;
  limit: (amount: string, metric: string) => string;
  seats: string;
  seatsHint: (max: string) => string;
  total: (amount: string) => string;
  choose: (tier: string) => string;
  startTrial: (tier: string) => string;
  redirecting: string;
  notForSale: string;

  // The preview of a change (PricingTable, PlanManager)
  previewTitle: string;
  previewing: string;
  dueNow: (amount: string) => string;
  fromDate: (date: string) => string;
  previewLines: string;
  confirmChange: (amount: string) => string;
  confirmScheduled: (date: string) => string;
  goBack: string;
  changed: string;
  scheduled: (date: string) => string;

  // PlanManager
  planTitle: string;
  noSubscription: string;
  status: (status: string) => string;
  plan: string;
  renewsOn: string;
  endsOn: string;
  trialEndsOn: string;
  intervalName: (interval: string) => string;
  /** `3` and its text "3" → "3 seats". */
  seatCount: (count: number, text: string) => string;
  pendingChange: (tier: string, seats: string | null, date: string) => string;
  keepPlan: string;
  keptPlan: string;
  updateSeats: string;
  cancel: string;
  canceled: (date: string) => string;
  resume: string;
  resumed: string;
  portal: string;

  // UsageMeter
  usage: (used: string, limit: string) => string;
  atCapacity: string;
  nearLimit: string;

  // CreditBalance
  creditsTitle: (metric: string) => string;
  includedLeft: (left: string, included: string) => string;
  balance: (amount: string) => string;
  reserved: (amount: string) => string;
  available: (amount: string) => string;
  creditsNotCounted: (metric: string) => string;
  grantsTitle: string;
  grantExpires: (amount: string, date: string) => string;
  grantNeverExpires: (amount: string) => string;
  buyPack: (amount: string, metric: string, price: string) => string;
  packValidity: (days: string) => string;

  // Paywall
  upgradeTitle: string;
  upgradeText: (feature: string) => string;
  seePlans: string;
  hidePlans: string;
}

/** The built-in tier table's names as a reader writes them; any other name is humanised. */
const KNOWN_NAMES: Record<string, string> = {
  api_access: 'API access',
  audit_log: 'Audit log',
  sso: 'Single sign-on',
  ai_tokens: 'AI tokens',
};

/** `api_access` → "API access", `custom_reports` → "Custom reports". */
function humanise(name: string): string {
  if (Object.hasOwn(KNOWN_NAMES, name)) return KNOWN_NAMES[name]!;
  const words = name.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export const defaultLabels: Labels = {
  loading: 'Loading…',
  errorTitle: 'Something went wrong',
  errorReference: (id) => `Reference: ${id}`,
  retry: 'Try again',
  tierName: humanise,
  featureName: humanise,
  metricName: humanise,

  pricingTitle: 'Plans',
  billingPeriod: 'Billing period',
  monthly: 'Monthly',
  yearly: 'Yearly',
  perInterval: (amount, interval, perSeat) => `${amount} ${perSeat ? 'per seat ' : ''}per ${interval}`,
  free: 'Free',
  trialBadge: (days) => `${days}-day free trial`,
  currentPlan: 'Current plan',
  featuresHeading: 'Features',
  limitsHeading: 'Limits',
  included: 'Included',
  notIncluded: 'Not included',
  limit: (amount, metric) => `${metric}: ${amount}`,
  seats: 'Seats',
  seatsHint: (max) => `Up to ${max}`,
  total: (amount) => `Total: ${amount}`,
  choose: (tier) => `Choose ${tier}`,
  startTrial: (tier) => `Start a free trial of ${tier}`,
  redirecting: 'Opening the checkout…',
  notForSale: 'Not on sale at the moment',

  previewTitle: 'Confirm your change',
  previewing: 'Asking the payment provider what this costs…',
  dueNow: (amount) => `Due now: ${amount}`,
  fromDate: (date) => `Nothing is due now: the change takes effect from ${date}.`,
  previewLines: 'What the invoice says',
  confirmChange: (amount) => `Confirm and pay ${amount}`,
  confirmScheduled: (date) => `Confirm the change from ${date}`,
  goBack: 'Go back',
  changed: 'Your plan was changed.',
  scheduled: (date) => `Your plan changes on ${date}.`,

  planTitle: 'Your plan',
  noSubscription: 'You have no subscription: you are on the free plan.',
  status: (status) => ({ active: 'Active', trialing: 'Trial', past_due: 'Payment overdue', unpaid: 'Unpaid', incomplete: 'Incomplete' })[status] ?? status,
  plan: 'Plan',
  renewsOn: 'Renews on',
  endsOn: 'Ends on',
  trialEndsOn: 'Trial ends on',
  intervalName: (interval) => (interval === 'year' ? 'Yearly' : interval === 'month' ? 'Monthly' : interval),
  seatCount: (count, text) => (count === 1 ? '1 seat' : `${text} seats`),
  pendingChange: (tier, seats, date) => `Changes to ${tier}${seats === null ? '' : ` (${seats})`} on ${date}`,
  keepPlan: 'Keep my current plan',
  keptPlan: 'The change was dropped: you keep your current plan.',
  updateSeats: 'Change seats',
  cancel: 'Cancel at the end of the period',
  canceled: (date) => `Your subscription ends on ${date}.`,
  resume: 'Resume the subscription',
  resumed: 'Your subscription goes on.',
  portal: 'Payment details and invoices',

  usage: (used, limit) => `${used} of ${limit}`,
  atCapacity: 'At capacity',
  nearLimit: 'Nearly at the limit',

  creditsTitle: (metric) => `${metric} credits`,
  includedLeft: (left, included) => `${left} of ${included} included this period left`,
  balance: (amount) => `Credit balance: ${amount}`,
  reserved: (amount) => `Held for work in progress: ${amount}`,
  available: (amount) => `Available now: ${amount}`,
  creditsNotCounted: (metric) => `Your plan does not draw on ${metric} credits: they count once it does.`,
  grantsTitle: 'Credits by expiry, in the order they are used',
  grantExpires: (amount, date) => `${amount} expire on ${date}`,
  grantNeverExpires: (amount) => `${amount} never expire`,
  buyPack: (amount, metric, price) => `Buy ${amount} ${metric} for ${price}`,
  packValidity: (days) => `valid for ${days} days`,

  upgradeTitle: 'Upgrade to use this',
  upgradeText: (feature) => `${feature} is not in your plan.`,
  seePlans: 'See plans',
  hidePlans: 'Hide plans',
};
