// The dashboard's entry: sign-in, the hash router (ids only in the fragment, never the credential) and
// the list of apps. Each app's pages live in app-page.js, plans.js and customers.js.

import { ApiError, credential, freshKeys, onCredentialRejected, request } from './api.js';
import { AppPage } from './app-page.js';
import { DashboardApps, DashboardCreateApp } from './operations.js';
import { ErrorMessage, Field, formatDate, html, Loading, useLoad } from './ui.js';
import { useEffect, useState } from './vendor/hooks.js';
import { render } from './vendor/preact.js';

function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'apps' && parts[1]) {
    if (parts[2] === 'customers' && parts[3])
      return { page: 'customer', appId: parts[1], customerId: parts[3] };
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

function SignIn({ onSignedIn, reason }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await request(DashboardApps, {}, token.trim());
      credential.set(token.trim());
      onSignedIn();
    } catch (e) {
      if (e instanceof ApiError && e.code === 'UNAUTHENTICATED') setError('That admin token is not valid.');
      else if (e instanceof ApiError && e.code === 'FORBIDDEN')
        setError(
          'This credential is not the admin token: API keys and session tokens cannot open the dashboard.',
        );
      else setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Tollgate dashboard</h1>
    ${reason ? html`<p class="notice" role="status">${reason}</p>` : null}
    <form onSubmit=${submit} novalidate>
      <${Field} label="Admin token" error=${error} hint="The ADMIN_TOKEN this Tollgate was started with. It stays in this tab only.">
        ${(props) => html`<input ...${props} type="password" autocomplete="off" spellcheck="false" required
          value=${token} onInput=${(e) => setToken(e.currentTarget.value)} />`}
      <//>
      <button type="submit" disabled=${busy || token.trim() === ''}>Sign in</button>
    </form>
  </main>`;
}

function CreateApp() {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  if (!open) return html`<button type="button" onClick=${() => setOpen(true)}>Create app</button>`;
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({});
    setError(undefined);
    try {
      const { createApp } = await request(DashboardCreateApp, { input: { name } });
      freshKeys.set(createApp.app.id, createApp.apiKey);
      location.hash = `#/apps/${encodeURIComponent(createApp.app.id)}`;
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      if (Object.keys(byField).length > 0) setErrors(byField);
      else setError(e);
    } finally {
      setBusy(false);
    }
  };
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
                <td><a href=${`#/apps/${encodeURIComponent(app.id)}`}>${app.name}</a></td>
                <td><code>${app.id}</code></td>
                <td>${formatDate(app.createdAt)}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
        : null
    }
  </main>`;
}

function Dashboard() {
  const [signedIn, setSignedIn] = useState(() => credential.get() !== null);
  const [reason, setReason] = useState(undefined);
  const route = useRoute();
  useEffect(
    () =>
      onCredentialRejected(() => {
        credential.clear();
        setReason('The admin token was refused: sign in again.');
        setSignedIn(false);
      }),
    [],
  );
  if (!signedIn) return html`<${SignIn} reason=${reason} onSignedIn=${() => setSignedIn(true)} />`;
  const signOut = () => {
    credential.clear();
    freshKeys.clear();
    setReason(undefined);
    setSignedIn(false);
  };
  return html`<div class="shell">
    <header>
      <a class="brand" href="#/">Tollgate</a>
      <nav aria-label="Main"><a href="#/" aria-current=${route.page === 'apps' ? 'page' : undefined}>Apps</a></nav>
      <button type="button" class="secondary" onClick=${signOut}>Sign out</button>
    </header>
    ${route.page === 'apps' ? html`<${AppsPage} />` : html`<${AppPage} key=${route.appId} route=${route} />`}
  </div>`;
}

const root = document.getElementById('root');
// The static "Loading…" placeholder goes: render() would otherwise keep it above the dashboard.
root.replaceChildren();
render(html`<${Dashboard} />`, root);
