import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { subscribers, type MessageSubscriber } from './components/ChatView';
import { allSessions } from './session';
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

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
