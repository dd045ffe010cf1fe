// A minimal ChatState, as @ai-sdk/react's keeps it (immutable message list, structuredClone
// snapshots), and the AI SDK's AbstractChat over it: what the e2e scripts drive instead of a page.
import { AbstractChat } from 'ai';

export class MemoryChatState {
  #status = 'ready';
  error = undefined;
  messages = [];
  constructor(onStatus = () => {}, messages = []) {
    this.onStatus = onStatus;
    this.messages = messages;
  }
  get status() {
    return this.#status;
  }
  set status(status) {
    if (status !== this.#status) this.onStatus(status);
    this.#status = status;
  }
  pushMessage = message => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = thing => structuredClone(thing);
}

/** `new Chat({...init, onStatus, messages})`: an AbstractChat on a MemoryChatState (`onStatus` sees each
 * change; `messages`: what the chat holds at first, as a page reloaded from the server's copy starts). */
export class Chat extends AbstractChat {
  constructor({ onStatus, messages, ...init }) {
    super({ ...init, state: new MemoryChatState(onStatus, messages ?? []) });
  }
}
