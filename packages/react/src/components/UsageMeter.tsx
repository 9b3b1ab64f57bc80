import type { Metric } from '@billing-licensing/client';
import { useId } from 'react';
import { useUsage } from '../hooks.js';
import type { Labels } from '../labels.js';
import { useBilling, useLabels } from '../provider.js';
import { ErrorState, Loading } from './shared.js';

export interface UsageMeterProps {
  metric: Metric;
  /** The share of the limit from which the meter says "nearly at the limit" (default 0.8). */
  threshold?: number;
  labels?: Partial<Labels>;
}

/** A metric's used / limit as a meter, with its at-capacity and threshold states. */
export function UsageMeter({ metric, threshold = 0.8, labels: own }: UsageMeterProps) {
  const labels = useLabels(own);
  const { format } = useBilling();
  const usage = useUsage(metric);
  const labelId = useId();
  if (usage.loading) return <Loading labels={labels} />;
  if (!usage.data) {
    return usage.error ? <ErrorState error={usage.error} labels={labels} onRetry={() => void usage.refresh()} /> : null;
  }
  const { used, limit, at_capacity: atCapacity } = usage.data;
  const state = atCapacity ? 'at-capacity' : used >= threshold * limit ? 'near-limit' : 'ok';
  const text = labels.usage(format.number(used), format.number(limit));
  return (
    <div className="bl-meter" data-state={state}>
      <div className="bl-meter-label">
        <span id={labelId}>{labels.metricName(metric)}</span>
        <span>{text}</span>
      </div>
      <meter
        aria-labelledby={labelId}
        aria-valuetext={text}
        min={0}
        max={Math.max(limit, 1)}
        value={Math.min(used, Math.max(limit, 1))}
        low={threshold * limit}
        high={Math.max(limit - 0.5, threshold * limit)}
        optimum={0}
      />
      {state !== 'ok' ? <p className="bl-meter-state">{state === 'at-capacity' ? labels.atCapacity : labels.nearLimit}</p> : null}
    </div>
  );
}
