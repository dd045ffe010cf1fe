// Render errors stay in the UI layer: logged with the ids that locate them, shown as a small
// placeholder, never written into the message.
import { Component, type ErrorInfo, type ReactNode } from 'react';
import { logUiError, type UiErrorContext } from '../telemetry';

interface Props {
  context: () => UiErrorContext;
  children: ReactNode;
  label?: string;
}

export class ErrorBoundary extends Component<Props, { failed: boolean }> {
  state = { failed: false };

  static getDerivedStateFromError(): { failed: boolean } {
    return { failed: true };
  }

  componentDidCatch(error: Error, info: ErrorInfo): void {
    logUiError('render', error, { ...this.props.context(), componentStack: info.componentStack ?? undefined });
  }

  render(): ReactNode {
    if (this.state.failed) {
      return (
        <div className="render-error" data-testid="render-error">
          {this.props.label ?? 'This part'} could not be displayed (details in the browser console).
        </div>
      );
    }
    return this.props.children;
  }
}
