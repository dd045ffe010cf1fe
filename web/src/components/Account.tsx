// Who is signed in and the sign-out control (only with sign-in on), and the page shown instead of
// the app when nobody is: after a sign-out, or when the provider sent the browser back with an error.
import { useState } from 'react';
import { signIn, signOut, type Account } from '../auth';

export function AccountBar({ account }: { account: Account }) {
  const [leaving, setLeaving] = useState(false);
  return (
    <div className="account" data-testid="account">
      <span className="account-who">
        <span className="account-name" data-testid="account-name">
          {account.name}
        </span>
        {account.email && account.email !== account.name && (
          <span className="muted small" data-testid="account-email">
            {account.email}
          </span>
        )}
      </span>
      <button
        type="button"
        disabled={leaving}
        data-testid="sign-out"
        onClick={() => {
          setLeaving(true);
          void signOut();
        }}
      >
        Sign out
      </button>
    </div>
  );
}

export function SignInPage({ failure }: { failure?: string }) {
  return (
    <div className="signin" data-testid="signin-page">
      <span className="brand">Stepline</span>
      <p role={failure ? 'alert' : undefined}>{failure ? `Sign-in did not complete: ${failure}` : 'You are signed out.'}</p>
      <button type="button" className="new-chat" data-testid="sign-in" onClick={() => void signIn('/')}>
        Sign in
      </button>
    </div>
  );
}
