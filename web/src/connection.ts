// A chat's connection to the server and the attempts scheduled to get it back: one automatic
// resume after a stream broke; while the server cannot be reached, attempts with a growing pause
// until it answers; the Reconnect / Try now button resets them.

/**
 * `reconnecting`: following the run again; `unreachable`: the server could not be reached (a
 * restart, the network): retried with a back-off until it answers; `lost`: the server answered but
 * the stream could not be followed (the Reconnect button).
 */
export type Connection = 'ok' | 'reconnecting' | 'unreachable' | 'lost';

export interface ConnectionHost {
  /** Follow the chat's run again (its outcome calls back here). */
  reconnect(): Promise<void>;
  /** A stream is open. */
  busy(): boolean;
  changed(): void;
  /** The server answers again after an outage: read again what lists runs (the sidebar). */
  back(): void;
}

const RECONNECT_DELAY_MS = 800;
const AUTOMATIC_RECONNECTS = 1;
/** The pauses between attempts while the server cannot be reached; the last one repeats. */
const UNREACHABLE_RETRY_MS = [1000, 2000, 4000, 8000, 10_000];

export class ConnectionState {
  state: Connection = 'ok';
  private reconnects = 0;
  private unreachableRetries = 0;
  private timer: number | undefined;

  constructor(private readonly host: ConnectionHost) {}

  /** A stream broke or ended early: one automatic resume soon; after that the connection is lost. */
  scheduleReconnect(): void {
    if (this.reconnects >= AUTOMATIC_RECONNECTS) {
      this.state = 'lost';
      this.host.changed();
      return;
    }
    this.reconnects += 1;
    this.state = 'reconnecting';
    this.host.changed();
    window.setTimeout(() => {
      if (this.host.busy()) {
        // Another stream already follows the run (useChat's resume on mount, a reconnect that
        // came first): it carries the rest, and its own end decides what happens next.
        this.state = 'ok';
        this.host.changed();
        return;
      }
      void this.host.reconnect().then(() => {
        if (this.state === 'ok') this.reconnects = 0;
      });
    }, RECONNECT_DELAY_MS);
  }

  /** The server cannot be reached: try again after a pause that grows, until it answers. */
  retryWhileUnreachable(): void {
    this.state = 'unreachable';
    const delay = UNREACHABLE_RETRY_MS[Math.min(this.unreachableRetries, UNREACHABLE_RETRY_MS.length - 1)];
    this.unreachableRetries += 1;
    this.cancel();
    this.timer = window.setTimeout(() => {
      if (!this.host.busy()) void this.host.reconnect();
    }, delay);
  }

  /** A resume was answered: the connection is back. */
  answered(): void {
    const wasDown = this.state !== 'ok';
    this.cancel();
    this.state = 'ok';
    this.reconnects = 0;
    this.unreachableRetries = 0;
    if (wasDown) {
      this.host.back();
      this.host.changed();
    }
  }

  /** The person asks to reconnect now: the automatic attempts start over. */
  retryNow(): void {
    this.reconnects = 0;
    this.unreachableRetries = 0;
  }

  cancel(): void {
    window.clearTimeout(this.timer);
  }
}
