import type { Feature } from '@billing-licensing/client';
import { useId, useState, type ReactNode } from 'react';
import { useFeature } from '../hooks.js';
import type { Labels } from '../labels.js';
import { useLabels } from '../provider.js';
import { PricingTable, type PricingTableProps } from './PricingTable.js';
import { ErrorState, Loading } from './shared.js';

export interface PaywallProps {
  feature: Feature;
  /** Shown instead of the children while the feature is not in force; default: an upgrade prompt. */
  fallback?: ReactNode;
  /** The pricing table the default prompt opens. */
  pricingTable?: Omit<PricingTableProps, 'labels'>;
  labels?: Partial<Labels>;
  children?: ReactNode;
}

/**
 * Its children when the feature is in force for the organisation, else `fallback`: by default an upgrade
 * prompt whose button opens the pricing table below it.
 */
export function Paywall({ feature, fallback, pricingTable, labels: own, children }: PaywallProps) {
  const labels = useLabels(own);
  const gate = useFeature(feature);
  if (gate.loading) return <Loading labels={labels} />;
  if (gate.allowed) return <>{children}</>;
  if (gate.error) return <ErrorState error={gate.error} labels={labels} onRetry={() => void gate.refresh()} />;
  if (fallback !== undefined) return <>{fallback}</>;
  return <UpgradePrompt feature={feature} labels={labels} pricingTable={pricingTable} own={own} />;
}

function UpgradePrompt(props: { feature: Feature; labels: Labels; pricingTable: PaywallProps['pricingTable']; own: Partial<Labels> | undefined }) {
  const { feature, labels } = props;
  const [open, setOpen] = useState(false);
  const tableId = useId();
  return (
    <div className="bl-card bl-paywall">
      <p className="bl-paywall-title">{labels.upgradeTitle}</p>
      <p>{labels.upgradeText(labels.featureName(feature))}</p>
      <button type="button" className="bl-button bl-primary" aria-expanded={open} aria-controls={tableId} onClick={() => setOpen(!open)}>
        {open ? labels.hidePlans : labels.seePlans}
      </button>
      <div id={tableId}>{open ? <PricingTable headingLevel={3} {...props.pricingTable} {...(props.own ? { labels: props.own } : {})} /> : null}</div>
    </div>
  );
}
