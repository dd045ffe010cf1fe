// A message the user sent while the run worked, read by the model here (between two steps).
import type { Part } from '../model';
import { Icon } from './Icon';

export function SteeringNote({ part }: { part: Part }) {
  const parts = ((part as unknown as { parts?: { type: string; text?: string }[] }).parts ?? []).filter(p => p.type === 'text');
  return (
    <div className="block steering" data-testid="steer-message">
      <Icon name="user" /> <span className="muted">You, while it worked:</span> {parts.map(p => p.text).join('\n')}
    </div>
  );
}
