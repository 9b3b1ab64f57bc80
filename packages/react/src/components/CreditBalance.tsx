import type { Metric, ServiceError } from '@billing-licensing/client';
import { useId, useState } from 'react';
import { useCredits } from '../hooks.js';
import type { Labels } from '../labels.js';
import { useBilling, useLabels } from '../provider.js';
import { asServiceError } from '../store.js';
import { assignLocation, ErrorState, Loading, type Redirect } from './shared.js';

export interface CreditBalanceProps {
  metric: Metric;
  labels?: Partial<Labels>;
  /** Where the pack's checkout returns after paying (under the service's APP_URL); default the service's. */
  successUrl?: string;
  cancelUrl?: string;
  onRedirect?: Redirect;
  headingLevel?: 2 | 3 | 4;
  /**
   * The currency to show and sell the packs in (e.g. `'eur'`, as `PricingTable`'s): each pack price from the
   * provider's currency options, and the checkout in it. Default: each price's own currency.
   */
  currency?: string;
}

/**
 * A credits metric: what is left of the included amount, the balance, what is reserved and available, each
 * grant's remainder and expiry (`GET /api/licensing/credits`), and "buy" for each credit pack on sale, which
 * opens the provider's checkout for one pack (`POST /api/billing/credits/checkout`).
 */
export function CreditBalance(props: CreditBalanceProps) {
  const labels = useLabels(props.labels);
  const { client, organisationId, format } = useBilling();
  const credits = useCredits(props.metric, props.currency ? { currency: props.currency } : {});
  const titleId = useId();
  const [buying, setBuying] = useState<string | null>(null);
  const [error, setError] = useState<ServiceError | null>(null);
  const Title = `h${props.headingLevel ?? 2}` as 'h2';
  const metricName = labels.metricName(props.metric);

  async function buy(pack: string) {
    if (buying) return;
    setBuying(pack);
    setError(null);
    try {
      const { url } = await client.buyCredits({
        organisation_id: organisationId,
        pack,
        quantity: 1,
        ...(props.currency ? { currency: props.currency } : {}),
        ...(props.successUrl ? { success_url: props.successUrl } : {}),
        ...(props.cancelUrl ? { cancel_url: props.cancelUrl } : {}),
      });
      (props.onRedirect ?? assignLocation)(url);
    } catch (err) {
      setError(asServiceError(err));
      setBuying(null);
    }
  }

  let body;
  if (credits.loading) body = <Loading labels={labels} />;
  else if (!credits.data) body = credits.error ? <ErrorState error={credits.error} labels={labels} onRetry={() => void credits.refresh()} /> : null;
  else {
    const c = credits.data;
    body = (
      <>
        <p>{labels.includedLeft(format.number(c.includedLeft), format.number(c.included))}</p>
        {c.counted ? (
          <>
            <p>{labels.balance(format.number(c.balance))}</p>
            {c.reserved > 0 ? <p>{labels.reserved(format.number(c.reserved))}</p> : null}
            <p>{labels.available(format.number(c.available))}</p>
          </>
        ) : (
          <p className="bl-muted">{labels.creditsNotCounted(metricName)}</p>
        )}
        {c.grants.length > 0 ? (
          <ul className="bl-grants" aria-label={labels.grantsTitle}>
            {c.grants.map((grant) => (
              <li key={grant.id}>
                {grant.expires_at === null
                  ? labels.grantNeverExpires(format.number(grant.remaining))
                  : labels.grantExpires(format.number(grant.remaining), format.date(Date.parse(grant.expires_at) / 1000))}
              </li>
            ))}
          </ul>
        ) : null}
        {c.packs.length > 0 ? (
          <ul className="bl-packs">
            {c.packs.map((pack) => {
              const price = pack.prices[0];
              if (!price) return null;
              return (
                <li key={pack.pack}>
                  <button type="button" className="bl-button bl-primary" disabled={buying !== null} onClick={() => void buy(pack.pack)}>
                    {labels.buyPack(format.number(pack.amount), metricName, format.money(price.unit_amount, price.currency))}
                  </button>
                  {pack.expires_after_days !== null ? <span className="bl-muted"> {labels.packValidity(format.number(pack.expires_after_days))}</span> : null}
                </li>
              );
            })}
          </ul>
        ) : null}
        {buying ? (
          <p className="bl-notice" role="status">
            {labels.redirecting}
          </p>
        ) : null}
        {error ? <ErrorState error={error} labels={labels} /> : null}
      </>
    );
  }
  return (
    <section className="bl-card bl-credits" aria-labelledby={titleId}>
      <Title id={titleId}>{labels.creditsTitle(metricName)}</Title>
      {body}
    </section>
  );
}
