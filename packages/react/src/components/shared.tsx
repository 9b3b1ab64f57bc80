import type { Schemas, ServiceError } from '@billing-licensing/client';
import { useEffect, useId, useRef, useState } from 'react';
import type { Labels } from '../labels.js';
import { useBilling } from '../provider.js';
import { asServiceError } from '../store.js';

/** What to show of a failure: the service's own message (402, 409: what to do), else the client's. */
export function errorMessage(error: ServiceError): string {
  return error.body?.message ?? error.message;
}

/**
 * A failure, readable: the message, the support reference, and "Try again" for a read. A write's failure
 * gets no retry button: whether it was applied is unknown, and a second try could charge twice.
 */
export function ErrorState({ error, labels, onRetry }: { error: ServiceError; labels: Labels; onRetry?: (() => void) | undefined }) {
  return (
    <div className="bl-error" role="alert">
      <p className="bl-error-title">{labels.errorTitle}</p>
      <p>{errorMessage(error)}</p>
      {error.requestId ? <p className="bl-muted">{labels.errorReference(error.requestId)}</p> : null}
      {onRetry ? (
        <button type="button" className="bl-button" onClick={onRetry}>
          {labels.retry}
        </button>
      ) : null}
    </div>
  );
}

export function Loading({ labels }: { labels: Labels }) {
  return (
    <p className="bl-loading" role="status">
      {labels.loading}
    </p>
  );
}

/** Goes to a provider page (checkout, portal): the app may pass its own navigation. */
export type Redirect = (url: string) => void;
export const assignLocation: Redirect = (url) => window.location.assign(url);

/** A plan's price for an interval (monthly or yearly, one interval each). */
export function priceFor(plan: Schemas['Plan'], interval: 'month' | 'year'): Schemas['PlanPriceDto'] | undefined {
  return plan.prices.find((price) => price.interval === interval && price.interval_count === 1);
}

export type ChangeRequest = Pick<Schemas['ChangeSubscriptionDto'], 'tier' | 'interval' | 'seats'>;

type ChangeState =
  | { step: 'idle' }
  | { step: 'previewing'; request: ChangeRequest }
  | { step: 'preview'; request: ChangeRequest; preview: Schemas['PreviewResponse'] }
  | { step: 'confirming'; request: ChangeRequest; preview: Schemas['PreviewResponse'] }
  | { step: 'done'; message: string }
  | { step: 'failed'; error: ServiceError; request: ChangeRequest; preview?: Schemas['PreviewResponse'] };

/** The preview describes a change waiting for the period's end (a downgrade) rather than one made now. */
export function isScheduled(preview: Schemas['PreviewResponse']): boolean {
  return preview.effective_at > preview.proration_date;
}

/**
 * A change of an existing subscription in two steps: the provider's preview (which changes nothing), then,
 * only on confirmation, the change at the preview's proration date (charged what was shown). Nothing is retried.
 */
export function useChangeFlow(labels: Labels) {
  const { client, organisationId, refresh, format } = useBilling();
  const [state, setState] = useState<ChangeState>({ step: 'idle' });
  const busy = useRef(false);

  async function preview(request: ChangeRequest) {
    if (busy.current) return;
    busy.current = true;
    setState({ step: 'previewing', request });
    try {
      const answer = await client.previewChange({ organisation_id: organisationId, ...request });
      setState({ step: 'preview', request, preview: answer });
    } catch (err) {
      setState({ step: 'failed', error: asServiceError(err), request });
    } finally {
      busy.current = false;
    }
  }

  async function confirm() {
    if (busy.current || state.step !== 'preview') return;
    busy.current = true;
    const { request, preview: shown } = state;
    setState({ step: 'confirming', request, preview: shown });
    try {
      await client.changeSubscription({ organisation_id: organisationId, ...request, proration_date: shown.proration_date });
      const message = isScheduled(shown) ? labels.scheduled(format.date(shown.effective_at)) : labels.changed;
      await refresh();
      setState({ step: 'done', message });
    } catch (err) {
      setState({ step: 'failed', error: asServiceError(err), request, preview: shown });
      void refresh();
    } finally {
      busy.current = false;
    }
  }

  return { state, preview, confirm, reset: () => setState({ step: 'idle' }) };
}

export type ChangeFlow = ReturnType<typeof useChangeFlow>;

/** The preview of a change and its confirmation; focus moves to it when it opens. */
export function ChangePreview({ flow, labels }: { flow: ChangeFlow; labels: Labels }) {
  const { format } = useBilling();
  const heading = useRef<HTMLHeadingElement>(null);
  const headingId = useId();
  const { state } = flow;
  const open = state.step === 'previewing' || state.step === 'preview' || state.step === 'confirming' || state.step === 'failed';
  useEffect(() => {
    if (open) heading.current?.focus();
  }, [open]);
  if (state.step === 'idle') return null;
  if (state.step === 'done') {
    return (
      <p className="bl-notice" role="status">
        {state.message}
      </p>
    );
  }
  const shown = state.step === 'previewing' ? undefined : state.preview;
  const scheduled = shown ? isScheduled(shown) : false;
  return (
    <section className="bl-preview" aria-labelledby={headingId}>
      <h3 id={headingId} ref={heading} tabIndex={-1}>
        {labels.previewTitle}
      </h3>
      {state.step === 'previewing' ? <Loading labels={{ ...labels, loading: labels.previewing }} /> : null}
      {shown ? (
        <>
          <p className="bl-total">
            {scheduled ? labels.fromDate(format.date(shown.effective_at)) : labels.dueNow(format.money(shown.amount_due, shown.currency))}
          </p>
          {shown.lines.length > 0 ? (
            <table className="bl-lines">
              <caption>{labels.previewLines}</caption>
              <tbody>
                {shown.lines.map((line, i) => (
                  <tr key={i}>
                    <th scope="row">{line.description}</th>
                    <td>{format.money(line.amount, shown.currency)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </>
      ) : null}
      {state.step === 'failed' ? <ErrorState error={state.error} labels={labels} /> : null}
      <div className="bl-actions">
        {shown && state.step !== 'failed' ? (
          <button type="button" className="bl-button bl-primary" disabled={state.step === 'confirming'} onClick={() => void flow.confirm()}>
            {scheduled ? labels.confirmScheduled(format.date(shown.effective_at)) : labels.confirmChange(format.money(shown.amount_due, shown.currency))}
          </button>
        ) : null}
        <button type="button" className="bl-button" disabled={state.step === 'confirming'} onClick={flow.reset}>
          {labels.goBack}
        </button>
      </div>
    </section>
  );
}
