// Operators: the e-mail sign-in (a link whose token arrives in this page's fragment), the cookie session
// (httpOnly: the page only ever holds its anti-forgery token) and what a viewer is not shown.

import { ApiError, operatorCsrf } from './api.js';
import { Field, html } from './ui.js';
import { useState } from './vendor/hooks.js';

async function call(path, method, body) {
  let response;
  try {
    const headers = { 'content-type': 'application/json' };
    const csrf = operatorCsrf.get();
    if (csrf) headers['x-csrf-token'] = csrf;
    const init = {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    };
    // Each address written out: the page's only fetches are these and /graphql (a test reads them).
    response = await (path === '/dashboard/sign-in'
      ? fetch('/dashboard/sign-in', init)
      : fetch('/dashboard/session', init));
  } catch {
    throw new ApiError('Tollgate could not be reached. Check the connection and try again.', 'NETWORK');
  }
  const answer = await response.json().catch(() => undefined);
  if (!response.ok) {
    throw new ApiError(answer?.message ?? `HTTP ${response.status}`, `HTTP_${response.status}`);
  }
  return answer;
}

const SIGN_IN_FRAGMENT = /^#sign-in=([A-Za-z0-9_%-]+)$/;

/**
 * Who is signed in by cookie, after exchanging a sign-in link's token when the page was opened from one
 * (the fragment is cleared first, so the token stays out of the history). Resolves to
 * `{ operator, tokenSignIn, error }`, operator null when nobody is.
 */
export async function startOperatorSession() {
  const link = SIGN_IN_FRAGMENT.exec(location.hash);
  if (link) {
    history.replaceState(null, '', `${location.pathname}${location.search}`);
    try {
      const signedIn = await call('/dashboard/session', 'POST', { token: decodeURIComponent(link[1]) });
      operatorCsrf.set(signedIn.csrfToken);
      const { tokenSignIn } = await call('/dashboard/session', 'GET');
      return { operator: signedIn.operator, tokenSignIn };
    } catch (e) {
      const { tokenSignIn } = await call('/dashboard/session', 'GET').catch(() => ({ tokenSignIn: false }));
      const error =
        e instanceof ApiError && e.code === 'HTTP_401'
          ? 'That sign-in link is used or has expired: ask for a new one.'
          : e.message;
      return { operator: null, tokenSignIn, error };
    }
  }
  const session = await call('/dashboard/session', 'GET');
  operatorCsrf.set(session.csrfToken);
  return { operator: session.operator, tokenSignIn: session.tokenSignIn };
}

/** Ends the cookie session (the server forgets it and clears the cookie). */
export async function signOutOperator() {
  try {
    await call('/dashboard/session', 'DELETE');
  } finally {
    operatorCsrf.set(undefined);
  }
}

/** The operator sign-in form: an address, and a link sent to it if it is an operator's. */
export function OperatorSignIn() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setSent(undefined);
    try {
      await call('/dashboard/sign-in', 'POST', { email: email.trim() });
      setSent(email.trim());
    } catch (e) {
      setError(e.code === 'HTTP_429' ? 'Too many sign-in attempts: try again in a few minutes.' : e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form onSubmit=${submit} novalidate aria-label="Operator sign-in">
    <h2>Operator sign-in</h2>
    <${Field} label="E-mail" error=${error} hint="Operators get a one-time sign-in link by e-mail.">
      ${(props) => html`<input ...${props} type="email" autocomplete="email" required
        value=${email} onInput=${(e) => setEmail(e.currentTarget.value)} />`}
    <//>
    <button type="submit" disabled=${busy || email.trim() === ''}>Send sign-in link</button>
    ${
      sent
        ? html`<p class="notice" role="status">If ${sent} belongs to an operator, a sign-in link is on its way. It works once, for 15 minutes.</p>`
        : null
    }
  </form>`;
}

/** Buttons that only read or navigate: a viewer keeps them. */
const READING = /^(Search|Previous|Next|Refresh|Test|Cancel|Copy|Load more|Apply|Show|Hide|Close)\b/;

function isWriteControl(element) {
  if (element.closest('form[role="search"], nav, [data-reads]')) return false;
  const label = (element.getAttribute('aria-label') ?? element.textContent ?? '').trim();
  return !READING.test(label);
}

/**
 * A viewer reads everything and changes nothing (the API refuses their writes with 403): every control
 * that would write is taken off the page as it appears, so the pages need no role of their own.
 */
export function hideWriteControls(root) {
  const sweep = () => {
    for (const element of root.querySelectorAll('main button, main .confirm, main dialog')) {
      if (element.style.display === 'none') continue;
      if (element.matches('button') && !isWriteControl(element)) continue;
      element.hidden = true;
      element.style.display = 'none';
    }
  };
  sweep();
  const observer = new MutationObserver(sweep);
  observer.observe(root, { childList: true, subtree: true, characterData: true });
  return () => observer.disconnect();
}
