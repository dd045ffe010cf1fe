// The page: the conversation sidebar (most recent first, with a running / waiting indicator) and
// the chat of the selected conversation. The URL is /c/{conversationId}; switching conversations
// never stops a run (the server runs it; the client keeps the other chat's stream open too).
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { deleteConversation, listConversations, type ConversationSummary } from './api';
import type { Account } from './auth';
import { AccountBar } from './components/Account';
import { UsageSummary } from './components/Usage';
import { ChatLoader } from './components/ChatView';
import { Icon, Spinner } from './components/Icon';
import type { SessionHooks } from './session';
import { dropSession, existingSession } from './sessions';
import { logUiError } from './telemetry';

// How often the sidebar asks the server for the conversations (a GET per poll, per open tab): often
// while a run works, less while runs only wait for a person, rarely when nothing is active. Any
// run this page starts or follows refreshes it at once, and so does coming back to the tab.
const POLL_RUNNING_MS = 1500;
const POLL_WAITING_MS = 5000;
const POLL_IDLE_MS = 15000;

function pollDelay(conversations: ConversationSummary[]): number {
  if (conversations.some(c => c.status === 'running')) return POLL_RUNNING_MS;
  if (conversations.some(c => c.activeRunId !== null)) return POLL_WAITING_MS;
  return POLL_IDLE_MS;
}

function idFromPath(): string | null {
  const match = /^\/c\/([^/]+)\/?$/.exec(window.location.pathname);
  return match ? decodeURIComponent(match[1]) : null;
}

function newId(): string {
  return `chat-${crypto.randomUUID()}`;
}

function remember(fresh: Set<string>, id: string): string {
  fresh.add(id);
  return id;
}

type Indicator = 'running' | 'waiting' | 'failed' | null;

function indicatorOf(summary: ConversationSummary): Indicator {
  const session = existingSession(summary.id);
  if (session && (session.chat.status === 'streaming' || session.chat.status === 'submitted') && summary.status === 'running') {
    return 'running';
  }
  if (summary.status === 'running') return 'running';
  if (summary.status === 'waiting_approval' || summary.status === 'waiting_user') return 'waiting';
  if (summary.status === 'failed') return 'failed';
  return null;
}

/** The app; `account` is who is signed in (with sign-in on). */
export function App({ account }: { account?: Account }) {
  const [fresh] = useState(() => new Set<string>());
  const [selected, setSelected] = useState<string>(() => idFromPath() ?? remember(fresh, newId()));
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [listError, setListError] = useState<string>();
  const [menuOpen, setMenuOpen] = useState(false);

  const latest = useRef<ConversationSummary[]>([]);
  const lastAsked = useRef(0);
  const failed = useRef(false);
  const refresh = useCallback(async () => {
    lastAsked.current = Date.now();
    try {
      const listed = await listConversations();
      latest.current = listed;
      failed.current = false;
      setConversations(listed);
      setListError(undefined);
    } catch (error) {
      // A failed fetch is the server not reached (a restart): the list is asked again soon.
      failed.current = true;
      setListError(error instanceof TypeError ? 'the server cannot be reached; trying again' : String(error));
      logUiError('refresh', error, {});
    }
  }, []);

  const hooks: SessionHooks = useMemo(() => ({ onRunsChanged: () => void refresh() }), [refresh]);

  useEffect(() => {
    let timer: number | undefined;
    let stopped = false;
    const tick = async () => {
      const due = Date.now() - lastAsked.current >= (failed.current ? POLL_RUNNING_MS : pollDelay(latest.current));
      if (due && document.visibilityState === 'visible') await refresh();
      if (!stopped) timer = window.setTimeout(() => void tick(), POLL_RUNNING_MS);
    };
    const onVisible = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    void tick();
    document.addEventListener('visibilitychange', onVisible);
    window.addEventListener('focus', onVisible);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      document.removeEventListener('visibilitychange', onVisible);
      window.removeEventListener('focus', onVisible);
    };
  }, [refresh]);

  useEffect(() => {
    const onPop = () => setSelected(idFromPath() ?? remember(fresh, newId()));
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, [fresh]);

  useEffect(() => {
    const path = `/c/${encodeURIComponent(selected)}`;
    if (window.location.pathname !== path) window.history.replaceState(null, '', path);
  }, [selected]);

  const open = (id: string) => {
    if (id !== selected) window.history.pushState(null, '', `/c/${encodeURIComponent(id)}`);
    setSelected(id);
    setMenuOpen(false);
  };

  const remove = async (id: string) => {
    try {
      await deleteConversation(id);
      dropSession(id);
      if (id === selected) open(remember(fresh, newId()));
      await refresh();
    } catch (error) {
      setListError(String(error));
    }
  };

  const summary = conversations.find(c => c.id === selected);

  return (
    <div className={menuOpen ? 'app menu-open' : 'app'}>
      <header className="topbar">
        <button type="button" className="icon-button" onClick={() => setMenuOpen(!menuOpen)} aria-label="Conversations">
          <Icon name="menu" />
        </button>
        <span className="brand">Stepline</span>
        <span className="topbar-title">{summary?.title ?? 'New conversation'}</span>
      </header>
      <nav className="sidebar" data-testid="sidebar" aria-label="Conversations">
        <div className="sidebar-head">
          <span className="brand">Stepline</span>
          <button type="button" className="new-chat" onClick={() => open(remember(fresh, newId()))} data-testid="new-chat">
            <Icon name="plus" /> New chat
          </button>
        </div>
        {listError && (
          <div className="muted small" data-testid="list-error">
            Could not load the list ({listError})
          </div>
        )}
        <ul>
          {conversations.map(c => {
            const indicator = indicatorOf(c);
            return (
              <li
                key={c.id}
                className={c.id === selected ? 'selected' : ''}
                data-testid="conversation-item"
                data-conversation-id={c.id}
                data-indicator={indicator ?? 'none'}
              >
                <button type="button" className="conversation" onClick={() => open(c.id)}>
                  <span className="conversation-title">{c.title ?? 'Untitled'}</span>
                  {indicator === 'running' && <Spinner />}
                  {indicator === 'waiting' && <span className="dot waiting" title="Waiting for you" />}
                  {indicator === 'failed' && <span className="dot failed" title="Failed" />}
                </button>
                {c.activeRunId === null && (
                  <button type="button" className="icon-button delete" onClick={() => void remove(c.id)} aria-label="Delete conversation">
                    <Icon name="x" />
                  </button>
                )}
              </li>
            );
          })}
        </ul>
        <UsageSummary version={conversations.map(c => `${c.id}:${c.status}`).join()} />
        {account && <AccountBar account={account} />}
      </nav>
      <main className="main">
        <ChatLoader key={selected} id={selected} summary={summary} hooks={hooks} fresh={fresh.has(selected)} />
      </main>
    </div>
  );
}
