// ‹ n/m › at a branching point: the alternatives an edit or a regeneration made, one shown at a time.
// Switching shows the other branch (the server keeps every branch); what a tool did on a branch
// stays done whichever branch is shown.
import type { BranchPoint } from '../api';

export const NOT_UNDONE = 'Tools that ran on another branch are not undone.';

export function BranchNav(props: { point: BranchPoint; disabled: boolean; onSwitch: (messageId: string) => void }) {
  const { point, disabled, onSwitch } = props;
  const index = point.siblingIds.indexOf(point.activeId);
  const go = (to: number) => onSwitch(point.siblingIds[to]);
  return (
    <div className="branch-nav muted" data-testid="branch-nav" title={NOT_UNDONE}>
      <button type="button" className="link" aria-label="Previous version" data-testid="branch-prev" disabled={disabled || index <= 0} onClick={() => go(index - 1)}>
        ‹
      </button>
      <span data-testid="branch-position">
        {index + 1}/{point.siblingIds.length}
      </span>
      <button
        type="button"
        className="link"
        aria-label="Next version"
        data-testid="branch-next"
        disabled={disabled || index >= point.siblingIds.length - 1}
        onClick={() => go(index + 1)}
      >
        ›
      </button>
    </div>
  );
}
