// The chat sessions of this page, one per conversation opened: a chat keeps streaming in the
// background while the user looks at another one.
import type { UIMessage } from 'ai';
import { ChatSession, type SessionHooks } from './session';

const sessions = new Map<string, ChatSession>();

export function existingSession(id: string): ChatSession | undefined {
  return sessions.get(id);
}

export function openSession(id: string, messages: UIMessage[], hooks: SessionHooks): ChatSession {
  let session = sessions.get(id);
  if (!session) {
    session = new ChatSession(id, messages, hooks);
    sessions.set(id, session);
  }
  return session;
}

export function dropSession(id: string): void {
  const session = sessions.get(id);
  sessions.delete(id);
  session?.dispose();
}

export function allSessions(): ChatSession[] {
  return [...sessions.values()];
}
