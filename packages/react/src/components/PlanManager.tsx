import type { ServiceError } from '@billing-licensing/client';
import { useId, useRef, useState, type ReactNode } from 'react';
import { usePlans, useSubscription } from '../hooks.js';
import type { Labels } from '../labels.js';
import { useBilling, useLabels } from '../provider.js';
import { asServiceError } from '../store.js';
import { SeatsField } from './PricingTable.js';
import { assignLocation, ChangePreview, ErrorState, Loading, useChangeFlow, type Redirect } from './shared.js';

export interface PlanManagerProps {
  labels?: Partial<Labels>;
  /** How to go to the provider's billing portal (default: `window.location.assign`). */
  onRedirect?: Redirect;
  /** Shown under "no subscription" (e.g. a link to the pricing table). */
  children?: ReactNode;
  /** The heading's level (default 2). */
  headingLevel?: 2 | 3 | 4;
}

type Outcome = { message: string } | { error: ServiceError } | null;

/**
 * The current subscription: its plan, status and period, a change waiting for the period's end (with "keep my
 * current plan", which releases it), seats for a per-seat tier (previewed, then confirmed), cancel at the
 * period's end and resume, and the provider's portal for payment details and invoices.
 */
export function PlanManager(props: PlanManagerProps) {
  const labels = useLabels(props.labels);
  const { client, organisationId, format, refresh } = useBilling();
  const subscription = useSubscription();
  const plans = usePlans();
  const flow = useChangeFlow(labels);
  const titleId = useId();
  const seatsId = useId();
  const [seats, setSeats] = useState<number | null>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [acting, setActing] = useState(false);
  const busy = useRef(false);
  const Title = `h${props.headingLevel ?? 2}` as 'h2';

  /** One write at a time, never retried: its outcome is shown, then everything is read again. */
  async function act(write: () => Promise<unknown>, done: string | (() => string)) {
    if (busy.current) return;
    busy.current = true;
    setActing(true);
    setOutcome(null);
    flow.reset();
    try {
      await write();
      await refresh();
      setOutcome({ message: typeof done === 'function' ? done() : done });
    } catch (err) {
      setOutcome({ error: asServiceError(err) });
      void refresh();
    } finally {
      busy.current = false;
      setActing(false);
    }
  }

  let body: ReactNode;
  if (subscription.loading) {
    body = <Loading labels={labels} />;
  } else if (subscription.data === undefined) {
    body = <ErrorState error={subscription.error!} labels={labels} onRetry={() => void subscription.refresh()} />;
  } else if (subscription.data === null) {
    body = (
      <>
        <p>{labels.noSubscription}</p>
        {props.children}
      </>
    );
  } else {
    const sub = subscription.data;
    const plan = plans.data?.data.find((p) => p.tier === sub.tier);
    const pending = sub.pending_change;
    const periodEnd = sub.current_period_end === null ? null : format.date(sub.current_period_end);
    const count = seats ?? sub.seats ?? 1;
    const disabled = acting || flow.state.step === 'previewing' || flow.state.step === 'confirming';
    body = (
      <>
        <dl className="bl-facts">
          <div>
            <dt>{labels.plan}</dt>
            <dd>
              <span>{sub.tier ? labels.tierName(sub.tier) : '—'}</span> <span className="bl-badge">{labels.status(sub.status)}</span>
            </dd>
          </div>
          {sub.interval ? (
            <div>
              <dt>{labels.billingPeriod}</dt>
              <dd>{labels.intervalName(sub.interval)}</dd>
            </div>
          ) : null}
          {sub.seats !== null ? (
            <div>
              <dt>{labels.seats}</dt>
              <dd>{format.number(sub.seats)}</dd>
            </div>
          ) : null}
          {periodEnd ? (
            <div>
              <dt>{sub.cancel_at_period_end ? labels.endsOn : labels.renewsOn}</dt>
              <dd>{periodEnd}</dd>
            </div>
          ) : null}
          {sub.trial_end !== null ? (
            <div>
              <dt>{labels.trialEndsOn}</dt>
              <dd>{format.date(sub.trial_end)}</dd>
            </div>
          ) : null}
        </dl>

        {pending ? (
          <div className="bl-pending">
            <p>
              {labels.pendingChange(
                pending.tier ? labels.tierName(pending.tier) : '—',
                pending.seats === null || !plans.data?.data.find((p) => p.tier === pending.tier)?.per_seat
                  ? null
                  : labels.seatCount(pending.seats, format.number(pending.seats)),
                format.date(pending.effective_at),
              )}
            </p>
            <button type="button" className="bl-button" disabled={disabled} onClick={() => void act(() => client.releasePendingChange(organisationId), labels.keptPlan)}>
              {labels.keepPlan}
            </button>
          </div>
        ) : null}

        {plan?.per_seat ? (
          <form
            className="bl-seats"
            onSubmit={(event) => {
              event.preventDefault();
              setOutcome(null);
              void flow.preview({ seats: count });
            }}
          >
            <SeatsField
              id={seatsId}
              labels={labels}
              value={count}
              max={plan.limits.users}
              maxText={format.number(plan.limits.users)}
              onChange={setSeats}
            />
            <button type="submit" className="bl-button" disabled={disabled || count === sub.seats}>
              {labels.updateSeats}
            </button>
          </form>
        ) : null}
        <ChangePreview flow={flow} labels={labels} />

        <div className="bl-actions">
          {sub.cancel_at_period_end ? (
            <button type="button" className="bl-button bl-primary" disabled={disabled} onClick={() => void act(() => client.resume(organisationId), labels.resumed)}>
              {labels.resume}
            </button>
          ) : (
            <button
              type="button"
              className="bl-button bl-danger"
              disabled={disabled}
              onClick={() => void act(() => client.cancel(organisationId), () => labels.canceled(periodEnd ?? ''))}
            >
              {labels.cancel}
            </button>
          )}
          <button
            type="button"
            className="bl-button"
            disabled={disabled}
            onClick={() =>
              void (async () => {
                try {
                  const { url } = await client.portal(organisationId);
                  (props.onRedirect ?? assignLocation)(url);
                } catch (err) {
                  setOutcome({ error: asServiceError(err) });
                }
              })()
            }
          >
            {labels.portal}
          </button>
        </div>
        {outcome && 'message' in outcome ? (
          <p className="bl-notice" role="status">
            {outcome.message}
          </p>
        ) : null}
        {outcome && 'error' in outcome ? <ErrorState error={outcome.error} labels={labels} /> : null}
      </>
    );
  }

  return (
    <section className="bl-card bl-manager" aria-labelledby={titleId}>
      <Title id={titleId}>{labels.planTitle}</Title>
      {body}
    </section>
  );
}
