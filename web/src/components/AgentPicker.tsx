// The agent of a new chat, when the deployment has several (GET /api/agents). The choice goes out
// as `body.agent` with the first message (DefaultChatTransport's `body`); the server keeps it for
// the conversation's life, so the picker is shown only before the first message.
import { useEffect, useState } from 'react';
import { listAgents, type AgentList } from '../api';
import type { ChatSession } from '../session';
import { logUiError } from '../telemetry';

let agents: Promise<AgentList> | undefined;

function loadAgents(): Promise<AgentList> {
  agents ??= listAgents().catch((error: unknown) => {
    agents = undefined; // ask again next time
    throw error;
  });
  return agents;
}

export function AgentPicker({ session }: { session: ChatSession }) {
  const [list, setList] = useState<AgentList>();
  const [chosen, setChosen] = useState<string | undefined>(session.agent);
  useEffect(() => {
    let cancelled = false;
    loadAgents()
      .then(loaded => {
        if (cancelled) return;
        setList(loaded);
        if (session.agent === undefined) {
          session.agent = loaded.default;
          setChosen(loaded.default);
        }
      })
      .catch((error: unknown) => logUiError('network', error, session.context()));
    return () => {
      cancelled = true;
    };
  }, [session]);
  if (!list || list.agents.length < 2) return null;
  const current = list.agents.find(a => a.name === chosen);
  return (
    <div className="agent-picker">
      <label>
        Agent{' '}
        <select
          data-testid="agent-picker"
          value={chosen}
          onChange={event => {
            session.agent = event.target.value;
            setChosen(event.target.value);
          }}
        >
          {list.agents.map(agent => (
            <option key={agent.name} value={agent.name}>
              {agent.name}
            </option>
          ))}
        </select>
      </label>
      {current?.description && <p className="muted small">{current.description}</p>}
    </div>
  );
}
