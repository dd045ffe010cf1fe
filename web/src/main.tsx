import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { startAuth } from './auth';
import { SignInPage } from './components/Account';
import { subscribers, type MessageSubscriber } from './components/ChatView';
import { loadConfig } from './config';
import { setApiBase } from './http';
import { allSessions } from './sessions';
import './styles.css';

declare global {
  interface Window {
    /** For integrations (analytics, tests): message subscribers, and the open chats' state. */
    stepline: {
      subscribe(fn: MessageSubscriber): () => void;
      sessions(): { id: string; status: string; connection: string; duplicatesDropped: number; lastEventSeq?: string }[];
    };
  }
}

window.stepline = {
  subscribe(fn) {
    subscribers.add(fn);
    return () => subscribers.delete(fn);
  },
  sessions: () =>
    allSessions().map(s => ({
      id: s.id,
      status: s.chat.status,
      connection: s.connection,
      duplicatesDropped: s.duplicatesDropped,
      lastEventSeq: s.lastEventSeq,
    })),
};

// The runtime configuration first (config.json), then who is signed in (with sign-in on: back from
// the provider, a stored session, or a redirect to the provider, after which nothing renders here).
async function start(): Promise<void> {
  const config = await loadConfig();
  setApiBase(config.apiBase);
  const auth = await startAuth(config.auth);
  if (auth.kind === 'redirecting') return;
  const root = createRoot(document.getElementById('root')!);
  if (auth.kind === 'signed-out' || auth.kind === 'failed') {
    root.render(<SignInPage failure={auth.kind === 'failed' ? auth.message : undefined} />);
    return;
  }
  root.render(
    <StrictMode>
      <App account={auth.kind === 'signed-in' ? auth.account : undefined} />
    </StrictMode>,
  );
}

void start().catch((error: unknown) => {
  createRoot(document.getElementById('root')!).render(<SignInPage failure={error instanceof Error ? error.message : String(error)} />);
});
