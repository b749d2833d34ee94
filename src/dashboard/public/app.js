// The dashboard's entry: sign-in, the hash router (ids only in the fragment, never the credential) and
// the list of apps. Each app's pages live in app-page.js, plans.js and customers.js.

import { ApiError, credential, freshKeys, isApiKey, onCredentialRejected, request } from './api.js';
import { AppPage } from './app-page.js';
import { AuditPage } from './audit-page.js';
import { DashboardApps, DashboardCreateApp, DashboardKeyApp } from './operations.js';
import { hideWriteControls, OperatorSignIn, signOutOperator, startOperatorSession } from './operator.js';
import { OperatorsPage } from './operators-page.js';
import { ErrorMessage, Field, formatDate, html, Loading, useLoad, useSubmit } from './ui.js';
import { useEffect, useState } from './vendor/hooks.js';
import { render } from './vendor/preact.js';

function parseRoute(hash) {
  let parts;
  try {
    parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    // A malformed escape (`#/apps/%E0%A4%A`, a mangled link) names no page: the list of apps.
    return { page: 'apps' };
  }
  if (parts[0] === 'operators') return { page: 'operators' };
  if (parts[0] === 'audit') return { page: 'audit' };
  if (parts[0] === 'apps' && parts[1]) {
    if (parts[2] === 'customers' && parts[3])
      return { page: 'customer', appId: parts[1], customerId: parts[3] };
    if (parts[2] === 'organizations' && parts[3])
      return { page: 'organization', appId: parts[1], organizationId: parts[3] };
    return { page: 'app', appId: parts[1], tab: parts[2] ?? 'settings' };
  }
  return { page: 'apps' };
}

function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

function SignIn({ onSignedIn, reason, tokenSignIn }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const candidate = token.trim();
    try {
      if (isApiKey(candidate)) {
        const { app } = await request(DashboardKeyApp, {}, candidate);
        location.hash = `#/apps/${encodeURIComponent(app.id)}`;
      } else {
        await request(DashboardApps, {}, candidate);
      }
      credential.set(candidate);
      onSignedIn();
    } catch (e) {
      if (e instanceof ApiError && e.code === 'UNAUTHENTICATED')
        setError(isApiKey(candidate) ? 'That API key is not valid.' : 'That admin token is not valid.');
      else if (e instanceof ApiError && e.code === 'FORBIDDEN')
        setError(
          'This credential cannot open the dashboard: use the admin token, or an API key for its app.',
        );
      else setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Tollgate dashboard</h1>
    ${reason ? html`<p class="notice" role="status">${reason}</p>` : null}
    ${tokenSignIn ? null : html`<${OperatorSignIn} />`}
    ${
      tokenSignIn
        ? html`<form onSubmit=${submit} novalidate>
      <${Field} label="Admin token" error=${error}
        hint="The ADMIN_TOKEN this Tollgate was started with, or an app's API key (tg_sk_…) for that app's pages. It stays in this tab only.">
        ${(props) => html`<input ...${props} type="password" autocomplete="off" spellcheck="false" required
          value=${token} onInput=${(e) => setToken(e.currentTarget.value)} />`}
      <//>
      <button type="submit" disabled=${busy || token.trim() === ''}>Sign in</button>
    </form>
    <${OperatorSignIn} />`
        : null
    }
  </main>`;
}

function CreateApp() {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const { busy, errors, error, submit } = useSubmit(async () => {
    const { createApp } = await request(DashboardCreateApp, { input: { name } });
    freshKeys.set(createApp.app.id, createApp.apiKey);
    location.hash = `#/apps/${encodeURIComponent(createApp.app.id)}`;
  });
  if (!open) return html`<button type="button" onClick=${() => setOpen(true)}>Create app</button>`;
  return html`<form class="card" onSubmit=${submit} novalidate aria-label="Create app">
    <h2>Create app</h2>
    <${Field} label="Name" error=${errors.name}>
      ${(props) => html`<input ...${props} type="text" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />`}
    <//>
    <${ErrorMessage} error=${error} />
    <div class="actions">
      <button type="submit" disabled=${busy}>Create</button>
      <button type="button" class="secondary" onClick=${() => setOpen(false)}>Cancel</button>
    </div>
  </form>`;
}

function AppsPage() {
  const apps = useLoad(() => request(DashboardApps), []);
  return html`<main>
    <div class="title-row">
      <h1>Apps</h1>
      <${CreateApp} />
    </div>
    ${apps.loading && !apps.data ? html`<${Loading} what="Loading apps" />` : null}
    <${ErrorMessage} error=${apps.error} />
    ${apps.data && apps.data.apps.length === 0 ? html`<p class="empty">No apps yet. Create the first one.</p>` : null}
    ${
      apps.data && apps.data.apps.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Apps</caption>
          <thead><tr><th scope="col">Name</th><th scope="col">ID</th><th scope="col">Created</th></tr></thead>
          <tbody>
            ${apps.data.apps.map(
              (app) => html`<tr key=${app.id}>
                <td data-label="Name"><a href=${`#/apps/${encodeURIComponent(app.id)}`}>${app.name}</a></td>
                <td data-label="ID"><code>${app.id}</code></td>
                <td data-label="Created">${formatDate(app.createdAt)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }
  </main>`;
}

/** Signed in with an API key, the dashboard is that key's app: its home is the app's page. */
function KeyHome() {
  const own = useLoad(() => request(DashboardKeyApp), []);
  useEffect(() => {
    if (own.data?.app) location.replace(`#/apps/${encodeURIComponent(own.data.app.id)}`);
  }, [own.data]);
  if (own.error) return html`<main><${ErrorMessage} error=${own.error} /></main>`;
  return html`<main><${Loading} what="Loading the app" /></main>`;
}

function Dashboard() {
  const [signedIn, setSignedIn] = useState(() => credential.get() !== null);
  const [reason, setReason] = useState(undefined);
  // A signed-in operator ({id, email, role}) when the session is the cookie's, not a typed credential.
  const [operator, setOperator] = useState(null);
  const [tokenSignIn, setTokenSignIn] = useState(true);
  const [checking, setChecking] = useState(() => credential.get() === null);
  const route = useRoute();
  useEffect(() => {
    if (credential.get() !== null) return;
    startOperatorSession().then(
      (session) => {
        setTokenSignIn(session.tokenSignIn);
        if (session.error) setReason(session.error);
        if (session.operator) {
          setOperator(session.operator);
          setSignedIn(true);
        }
        setChecking(false);
      },
      (e) => {
        setReason(e.message);
        setChecking(false);
      },
    );
  }, []);
  useEffect(
    () =>
      onCredentialRejected(() => {
        const what = isApiKey(credential.get())
          ? 'The API key was refused'
          : credential.get() === null
            ? 'Your operator session has ended'
            : 'The admin token was refused';
        credential.clear();
        setOperator(null);
        setReason(`${what}: sign in again.`);
        setSignedIn(false);
      }),
    [],
  );
  const viewer = operator?.role === 'viewer';
  useEffect(() => (viewer ? hideWriteControls(document.getElementById('root')) : undefined), [viewer]);
  if (checking) return html`<main><${Loading} what="Loading the dashboard" /></main>`;
  if (!signedIn)
    return html`<${SignIn} reason=${reason} tokenSignIn=${tokenSignIn} onSignedIn=${() => setSignedIn(true)} />`;
  const keyMode = isApiKey(credential.get());
  const managesOperators = !keyMode && (operator === null || operator.role === 'owner');
  const signOut = async () => {
    if (operator) await signOutOperator().catch(() => undefined);
    credential.clear();
    freshKeys.clear();
    setOperator(null);
    setReason(undefined);
    setSignedIn(false);
  };
  let content;
  if (route.page === 'operators' && managesOperators) content = html`<${OperatorsPage} />`;
  else if (route.page === 'audit' && !keyMode) content = html`<${AuditPage} />`;
  else if (route.page === 'operators' || route.page === 'audit')
    content = html`<main><p class="empty">This page is not yours to see. <a href="#/">Back</a></p></main>`;
  else if (route.page !== 'apps')
    content = html`<${AppPage} key=${route.appId} route=${route} keyMode=${keyMode} readOnly=${keyMode || viewer} />`;
  else content = keyMode ? html`<${KeyHome} />` : html`<${AppsPage} />`;
  return html`<div class="shell">
    <header>
      <a class="brand" href="#/">Tollgate</a>
      <nav aria-label="Main">
        ${
          keyMode
            ? html`<span>Signed in with an API key: its app only</span>`
            : html`<a href="#/" aria-current=${route.page === 'apps' ? 'page' : undefined}>Apps</a>
              <a href="#/audit" aria-current=${route.page === 'audit' ? 'page' : undefined}>Audit log</a>
              ${managesOperators ? html`<a href="#/operators" aria-current=${route.page === 'operators' ? 'page' : undefined}>Operators</a>` : null}`
        }
        ${operator ? html`<span class="who">${operator.email} (${operator.role})</span>` : null}
      </nav>
      <button type="button" class="secondary" onClick=${signOut}>Sign out</button>
    </header>
    ${content}
  </div>`;
}

const root = document.getElementById('root');
// The static "Loading…" placeholder goes: render() would otherwise keep it above the dashboard.
root.replaceChildren();
render(html`<${Dashboard} />`, root);
