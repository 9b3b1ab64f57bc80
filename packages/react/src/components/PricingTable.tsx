import type { Schemas, ServiceError } from '@billing-licensing/client';
import { useId, useState } from 'react';
import { usePlans, useSubscription } from '../hooks.js';
import type { Labels } from '../labels.js';
import { useBilling, useLabels } from '../provider.js';
import { asServiceError } from '../store.js';
import { assignLocation, ChangePreview, ErrorState, Loading, priceFor, useChangeFlow, type Redirect } from './shared.js';

export interface PricingTableProps {
  labels?: Partial<Labels>;
  /** Where the checkout returns after paying (under the service's APP_URL); default the service's. */
  successUrl?: string;
  /** Where the checkout returns when the buyer gives up; default the service's. */
  cancelUrl?: string;
  /** The interval shown first when the organisation has no subscription (default monthly). */
  defaultInterval?: 'month' | 'year';
  /** How to go to the checkout page (default: `window.location.assign`). */
  onRedirect?: Redirect;
  /** The heading's level (default 2; each plan's is one below). */
  headingLevel?: 2 | 3 | 4;
  /**
   * The currency to show and sell in (e.g. `'eur'`): every price from the provider's currency options, and the
   * checkout in it (a price without it: the error state). Default: each price's own currency. A change of a
   * subscription stays in the subscription's currency.
   */
  currency?: string;
}

type Interval = 'month' | 'year';
type Tier = Schemas['Plan']['tier'];

/**
 * The plan list with a monthly/yearly switch, seats for per-seat tiers, trial badges, features and limits, and
 * the current plan marked. Choosing a plan opens the provider's checkout for an organisation without a
 * subscription; for one with a subscription it first shows the provider's preview (what is due now, or from
 * when), and only its confirmation changes the subscription.
 */
export function PricingTable(props: PricingTableProps) {
  const labels = useLabels(props.labels);
  const { client, organisationId, format } = useBilling();
  const plans = usePlans(props.currency ? { currency: props.currency } : {});
  const subscription = useSubscription();
  const flow = useChangeFlow(labels);
  const titleId = useId();
  const [chosenInterval, setInterval] = useState<Interval | null>(null);
  const [seats, setSeats] = useState<Partial<Record<Tier, number>>>({});
  const [checkout, setCheckout] = useState<{ tier: Tier; error?: ServiceError } | null>(null);
  const level = props.headingLevel ?? 2;
  const Title = `h${level}` as 'h2';
  const PlanTitle = `h${level + 1}` as 'h3';

  if (plans.loading || subscription.loading) return <Loading labels={labels} />;
  const failed = plans.error ?? subscription.error;
  if (failed && (!plans.data || subscription.data === undefined)) {
    return <ErrorState error={failed} labels={labels} onRetry={() => void Promise.all([plans.refresh(), subscription.refresh()])} />;
  }
  const list = plans.data!.data;
  const current = subscription.data ?? null;
  const currentTier: Tier = current?.tier ?? 'free';
  const interval: Interval = chosenInterval ?? (current?.interval === 'year' ? 'year' : current?.interval === 'month' ? 'month' : (props.defaultInterval ?? 'month'));
  const intervals = (['month', 'year'] as const).filter((i) => list.some((plan) => priceFor(plan, i)));
  const seatsOf = (plan: Schemas['Plan']) => seats[plan.tier] ?? (current?.tier === plan.tier && current.seats ? current.seats : 1);
  const busy = checkout !== null && !checkout.error;

  async function choose(plan: Schemas['Plan']) {
    const perSeat = plan.per_seat ? { seats: seatsOf(plan) } : {};
    if (current) {
      await flow.preview({ tier: plan.tier, interval, ...perSeat });
      return;
    }
    if (busy) return;
    setCheckout({ tier: plan.tier });
    try {
      const { url } = await client.checkout({
        organisation_id: organisationId,
        tier: plan.tier,
        interval,
        ...perSeat,
        ...(props.currency ? { currency: props.currency } : {}),
        ...(props.successUrl ? { success_url: props.successUrl } : {}),
        ...(props.cancelUrl ? { cancel_url: props.cancelUrl } : {}),
      });
      (props.onRedirect ?? assignLocation)(url);
    } catch (err) {
      setCheckout({ tier: plan.tier, error: asServiceError(err) });
    }
  }

  return (
    <section className="bl-card bl-pricing" aria-labelledby={titleId}>
      <Title id={titleId}>{labels.pricingTitle}</Title>
      {intervals.length > 1 ? (
        <fieldset className="bl-switch">
          <legend>{labels.billingPeriod}</legend>
          {intervals.map((i) => (
            <label key={i}>
              <input type="radio" name={`${titleId}-interval`} value={i} checked={interval === i} onChange={() => setInterval(i)} />
              {i === 'month' ? labels.monthly : labels.yearly}
            </label>
          ))}
        </fieldset>
      ) : null}
      <ChangePreview flow={flow} labels={labels} />
      {checkout?.error ? <ErrorState error={checkout.error} labels={labels} /> : null}
      {busy ? (
        <p className="bl-notice" role="status">
          {labels.redirecting}
        </p>
      ) : null}
      <ul className="bl-plans">
        {list.map((plan) => {
          const price = priceFor(plan, interval);
          const name = labels.tierName(plan.tier);
          const count = seatsOf(plan);
          const isCurrent = plan.tier === currentTier && (!current || (current.interval === interval && (!plan.per_seat || current.seats === count)));
          const planId = `${titleId}-${plan.tier}`;
          return (
            <li key={plan.tier} className="bl-plan" data-current={isCurrent || undefined}>
              <article aria-labelledby={planId}>
                <PlanTitle id={planId}>{name}</PlanTitle>
                <p className="bl-badges">
                  {plan.tier === currentTier ? <span className="bl-badge bl-badge-current">{labels.currentPlan}</span> : null}
                  {plan.trial_days > 0 && !current ? <span className="bl-badge">{labels.trialBadge(plan.trial_days)}</span> : null}
                </p>
                <p className="bl-price">
                  {price
                    ? labels.perInterval(format.money(price.unit_amount, price.currency), interval === 'year' ? 'year' : 'month', plan.per_seat)
                    : plan.prices.length === 0 && plan.tier === 'free'
                      ? labels.free
                      : labels.notForSale}
                </p>
                {plan.per_seat && price ? (
                  <SeatsField
                    id={`${planId}-seats`}
                    labels={labels}
                    value={count}
                    max={plan.limits.users}
                    onChange={(n) => setSeats((all) => ({ ...all, [plan.tier]: n }))}
                    total={format.money(price.unit_amount * count, price.currency)}
                    maxText={format.number(plan.limits.users)}
                  />
                ) : null}
                <PlanDetails plan={plan} labels={labels} />
                {price && !isCurrent ? (
                  <button
                    type="button"
                    className="bl-button bl-primary"
                    disabled={busy || flow.state.step === 'previewing' || flow.state.step === 'confirming'}
                    onClick={() => void choose(plan)}
                  >
                    {!current && plan.trial_days > 0 ? labels.startTrial(name) : labels.choose(name)}
                  </button>
                ) : null}
              </article>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/** Seats, typed freely; the count in range (1 to the tier's most) is what the table uses. */
export function SeatsField(props: { id: string; labels: Labels; value: number; max: number; maxText: string; total?: string; onChange: (n: number) => void }) {
  const { id, labels, value, max } = props;
  const [text, setText] = useState(String(value));
  return (
    <div className="bl-field">
      <label htmlFor={id}>{labels.seats}</label>
      <input
        id={id}
        type="number"
        inputMode="numeric"
        min={1}
        max={max}
        step={1}
        value={text}
        aria-describedby={`${id}-hint`}
        onChange={(event) => {
          setText(event.target.value);
          const n = Number(event.target.value);
          if (Number.isInteger(n) && n >= 1 && n <= max) props.onChange(n);
        }}
      />
      <span id={`${id}-hint`} className="bl-muted">
        {labels.seatsHint(props.maxText)}
        {props.total ? ` · ${labels.total(props.total)}` : ''}
      </span>
    </div>
  );
}

/** A plan's features (each included or not) and limits. */
function PlanDetails({ plan, labels }: { plan: Schemas['Plan']; labels: Labels }) {
  const { format } = useBilling();
  const features = Object.entries(plan.features) as [string, boolean][];
  const limits = Object.entries(plan.limits) as [string, number][];
  return (
    <>
      {features.length > 0 ? (
        <>
          <p className="bl-subheading">{labels.featuresHeading}</p>
          <ul className="bl-features">
            {features.map(([feature, on]) => (
              <li key={feature} data-included={on}>
                <span aria-hidden="true" className="bl-mark">
                  {on ? '✓' : '–'}
                </span>
                {labels.featureName(feature)}
                <span className="bl-visually-hidden">: {on ? labels.included : labels.notIncluded}</span>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <p className="bl-subheading">{labels.limitsHeading}</p>
      <ul className="bl-limits">
        {limits.map(([metric, limit]) => (
          <li key={metric}>{labels.limit(format.number(limit), labels.metricName(metric))}</li>
        ))}
      </ul>
    </>
  );
}
