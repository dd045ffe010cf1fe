// The caller's spending today and this month (GET /api/usage), at the foot of the sidebar: tokens and
// cost of each period, against the deployment's user limit when it has one, with a line per agent.
import { useEffect, useState } from 'react';
import { getUsage, type PeriodUsage, type UsageView } from '../api';
import { logUiError } from '../telemetry';

function cost(usd: number | undefined): string {
  return usd === undefined ? 'cost unknown' : `$${usd.toFixed(usd < 0.01 ? 4 : 2)}`;
}

function Period({ label, usage }: { label: string; usage: PeriodUsage }) {
  const limit =
    usage.limitUsd !== undefined ? ` of $${usage.limitUsd.toFixed(2)}` : usage.limitTokens !== undefined ? ` of ${usage.limitTokens.toLocaleString()} tokens` : '';
  return (
    <div className="usage-period" data-testid={`usage-${label.toLowerCase().replace(' ', '-')}`}>
      <div>
        <span className="usage-label">{label}</span> {cost(usage.costUsd)} · {usage.tokens.toLocaleString()} tokens
        {limit && <span className="muted">{limit}</span>}
      </div>
      {Object.entries(usage.agents).map(([name, agent]) => (
        <div key={name} className="muted small" data-testid="usage-agent">
          {name}: {cost(agent.costUsd)} · {agent.tokens.toLocaleString()} tokens
        </div>
      ))}
    </div>
  );
}

/** Re-read whenever `version` changes (the sidebar passes its conversations' statuses: a run began or ended). */
export function UsageSummary({ version }: { version: string }) {
  const [usage, setUsage] = useState<UsageView>();
  useEffect(() => {
    let stale = false;
    getUsage()
      .then(read => !stale && setUsage(read))
      .catch((error: unknown) => logUiError('usage', error, {}));
    return () => {
      stale = true;
    };
  }, [version]);
  if (!usage) return null;
  return (
    <div className="usage small" data-testid="usage">
      <Period label="Today" usage={usage.day} />
      <Period label="This month" usage={usage.month} />
    </div>
  );
}
