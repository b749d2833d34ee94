// One app: its overview, settings, the callback-URL tester, API keys, plans, customers, webhooks and
// analytics (tabs in the fragment).
import { AnalyticsOverview, AnalyticsTab } from './analytics.js';
import { ApiError, freshKeys, request } from './api.js';
import { CustomerPage, CustomersTab } from './customers.js';
import {
  DashboardApp,
  DashboardAppView,
  DashboardCheckCallbackUrl,
  DashboardCreateApiKey,
  DashboardRevokeApiKey,
  DashboardUpdateSettings,
} from './operations.js';
import { OrganizationPage } from './organizations.js';
import { PlansTab } from './plans.js';
import {
  Checkbox,
  ConfirmButton,
  ErrorMessage,
  Field,
  formatDate,
  html,
  Loading,
  Notice,
  SecretOnce,
  useLoad,
  useSubmit,
} from './ui.js';
import { useState } from './vendor/hooks.js';
import { WebhooksTab } from './webhooks.js';

const TABS = [
  ['settings', 'Settings'],
  ['keys', 'API keys'],
  ['plans', 'Plans'],
  ['customers', 'Customers'],
  ['webhooks', 'Webhooks'],
  ['analytics', 'Analytics'],
];

function formFromSettings(settings) {
  return {
    autoCreateCustomer: settings.autoCreateCustomer,
    magicLinkExpiryMinutes: String(settings.magicLinkExpiryMinutes),
    allowedCallbackUrls: settings.allowedCallbackUrls,
    customVerificationUrl: settings.customVerificationUrl ?? '',
    trialPaymentMethod: settings.trialPaymentMethod,
    organizationsEnabled: settings.organizationsEnabled,
    allowMultipleSubscriptions: settings.allowMultipleSubscriptions,
    sessionTtlSeconds: String(settings.sessionTtlSeconds),
  };
}

/** Numbers are checked to be numbers here; every other rule is the API's, shown beside its field. */
function settingsInput(form) {
  const errors = {};
  const number = (field) => {
    const text = form[field].trim();
    if (text === '' || !Number.isFinite(Number(text))) errors[field] = 'must be a number';
    return Number(text);
  };
  const input = {
    autoCreateCustomer: form.autoCreateCustomer,
    magicLinkExpiryMinutes: number('magicLinkExpiryMinutes'),
    allowedCallbackUrls: form.allowedCallbackUrls,
    customVerificationUrl:
      form.customVerificationUrl.trim() === '' ? null : form.customVerificationUrl.trim(),
    trialPaymentMethod: form.trialPaymentMethod,
    organizationsEnabled: form.organizationsEnabled,
    allowMultipleSubscriptions: form.allowMultipleSubscriptions,
    sessionTtlSeconds: number('sessionTtlSeconds'),
  };
  return { input, errors };
}

function SettingsForm({ app, onSaved }) {
  const [form, setForm] = useState(() => formFromSettings(app.settings));
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const set = (field) => (value) => {
    setSaved(false);
    setForm((f) => ({ ...f, [field]: value }));
  };
  const text = (field) => (e) => set(field)(e.currentTarget.value);
  const submit = async (event) => {
    event.preventDefault();
    setSaved(false);
    setError(undefined);
    const { input, errors: local } = settingsInput(form);
    setErrors(local);
    if (Object.keys(local).length > 0) return;
    setBusy(true);
    try {
      const { updateAppSettings } = await request(DashboardUpdateSettings, { appId: app.id, input });
      setForm(formFromSettings(updateAppSettings.settings));
      setSaved(true);
      onSaved();
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      setErrors(byField);
      if (Object.keys(byField).length === 0) setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card" onSubmit=${submit} novalidate aria-labelledby="settings-title">
    <h2 id="settings-title">Settings</h2>
    <${Checkbox} label="Auto-create customers" checked=${form.autoCreateCustomer}
      onChange=${set('autoCreateCustomer')} error=${errors.autoCreateCustomer} />
    <${Field} label="Magic-link expiry (minutes)" error=${errors.magicLinkExpiryMinutes}>
      ${(p) => html`<input ...${p} type="number" inputmode="numeric" min="1" max="1440"
        value=${form.magicLinkExpiryMinutes} onInput=${text('magicLinkExpiryMinutes')} />`}
    <//>
    <${Field} label="Allowed callback URLs" error=${errors.allowedCallbackUrls}
      hint="One pattern per line, e.g. https://*.example.com/auth/*. http://localhost is always allowed.">
      ${(p) => html`<textarea ...${p} rows="4" spellcheck="false"
        value=${form.allowedCallbackUrls} onInput=${text('allowedCallbackUrls')}></textarea>`}
    <//>
    <${Field} label="Custom verification URL" error=${errors.customVerificationUrl}
      hint="Where magic links point instead of Tollgate's verify page; empty for none.">
      ${(p) => html`<input ...${p} type="url" spellcheck="false"
        value=${form.customVerificationUrl} onInput=${text('customVerificationUrl')} />`}
    <//>
    <${Field} label="Trial payment method" error=${errors.trialPaymentMethod}>
      ${(p) => html`<select ...${p} value=${form.trialPaymentMethod} onChange=${text('trialPaymentMethod')}>
        ${Object.entries(TRIAL_PAYMENT_METHODS).map(([value, label]) => html`<option value=${value}>${label}</option>`)}
      </select>`}
    <//>
    <${Checkbox} label="Organizations enabled" checked=${form.organizationsEnabled}
      onChange=${set('organizationsEnabled')} error=${errors.organizationsEnabled} />
    <${Checkbox} label="Several subscriptions per customer (add-ons)" checked=${form.allowMultipleSubscriptions}
      onChange=${set('allowMultipleSubscriptions')} error=${errors.allowMultipleSubscriptions} />
    <${Field} label="Session lifetime (seconds)" error=${errors.sessionTtlSeconds}>
      ${(p) => html`<input ...${p} type="number" inputmode="numeric" min="60"
        value=${form.sessionTtlSeconds} onInput=${text('sessionTtlSeconds')} />`}
    <//>
    <${ErrorMessage} error=${error} />
    ${Object.keys(errors).length > 0 ? html`<p class="error" role="alert">Not saved: see the fields marked above.</p>` : null}
    ${saved ? html`<${Notice}>Settings saved.<//>` : null}
    <button type="submit" disabled=${busy}>Save settings</button>
  </form>`;
}

function UrlTester({ appId }) {
  const [url, setUrl] = useState('');
  const [result, setResult] = useState(undefined);
  const [error, setError] = useState(undefined);
  const submit = async (event) => {
    event.preventDefault();
    setError(undefined);
    setResult(undefined);
    try {
      const { checkCallbackUrl } = await request(DashboardCheckCallbackUrl, { appId, url });
      setResult({ url, ...checkCallbackUrl });
    } catch (e) {
      setError(e);
    }
  };
  let verdict = null;
  if (result) {
    verdict = !result.allowed
      ? html`<p class="verdict denied" role="status">Not allowed: no saved pattern matches ${result.url}.</p>`
      : result.matchedPattern
        ? html`<p class="verdict allowed" role="status">Allowed by the pattern <code>${result.matchedPattern}</code>.</p>`
        : html`<p class="verdict allowed" role="status">Allowed: http://localhost is always allowed.</p>`;
  }
  return html`<form class="card" onSubmit=${submit} novalidate aria-labelledby="url-test-title">
    <h2 id="url-test-title">Test a URL</h2>
    <${Field} label="URL to test" hint="Checked against the saved patterns, with the login flow's own matcher.">
      ${(p) => html`<input ...${p} type="url" spellcheck="false" value=${url} onInput=${(e) => setUrl(e.currentTarget.value)} />`}
    <//>
    <button type="submit">Test</button>
    ${verdict}
    <${ErrorMessage} error=${error} />
  </form>`;
}

function KeysTab({ app, reload }) {
  const [created, setCreated] = useState(undefined);
  const [name, setName] = useState('');
  const { busy, errors, error, submit } = useSubmit(async () => {
    const { createApiKey } = await request(DashboardCreateApiKey, {
      appId: app.id,
      name: name.trim() || null,
    });
    setCreated(createApiKey.apiKey);
    setName('');
    reload();
  });
  const revoke = async (key) => {
    await request(DashboardRevokeApiKey, { id: key.id });
    reload();
  };
  return html`<section class="card" aria-labelledby="keys-title">
    <h2 id="keys-title">API keys</h2>
    <form class="inline" onSubmit=${submit} novalidate aria-label="Create API key">
      <${Field} label="Key name" error=${errors.name} hint="Optional: which server or job holds it.">
        ${(p) => html`<input ...${p} type="text" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />`}
      <//>
      <button type="submit" disabled=${busy}>Create API key</button>
    </form>
    <${ErrorMessage} error=${error} />
    ${created ? html`<${SecretOnce} label="New API key" secret=${created} onDismiss=${() => setCreated(undefined)} />` : null}
    ${
      app.apiKeys.length === 0
        ? html`<p class="empty">This app has no API keys.</p>`
        : html`<div class="table-wrap"><table>
          <caption class="visually-hidden">API keys</caption>
          <thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>
            ${app.apiKeys.map(
              (key) => html`<tr key=${key.id}>
                <td data-label="Key"><code>${key.prefix}…</code></td>
                <td data-label="Name">${key.name ?? '—'}</td>
                <td data-label="Created">${formatDate(key.createdAt)}</td>
                <td data-label="Last used">${key.lastUsedAt ? formatDate(key.lastUsedAt) : 'never'}</td>
                <td data-label="Status">${key.revokedAt ? `revoked ${formatDate(key.revokedAt)}` : 'active'}</td>
                <td>${
                  key.revokedAt
                    ? null
                    : html`<${ConfirmButton} label="Revoke" accessibleLabel=${`Revoke key ${key.prefix}`}
                      confirmLabel="Revoke key"
                      question=${`Revoke the key ${key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`}? Requests made with it are refused at once; this cannot be undone.`}
                      onConfirm=${() => revoke(key)} />`
                }</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`
    }
  </section>`;
}

const SETTING_LABELS = [
  ['autoCreateCustomer', 'Auto-create customers'],
  ['magicLinkExpiryMinutes', 'Magic-link expiry (minutes)'],
  ['allowedCallbackUrls', 'Allowed callback URLs'],
  ['customVerificationUrl', 'Custom verification URL'],
  ['trialPaymentMethod', 'Trial payment method'],
  ['organizationsEnabled', 'Organizations enabled'],
  ['allowMultipleSubscriptions', 'Several subscriptions per customer (add-ons)'],
  ['sessionTtlSeconds', 'Session lifetime (seconds)'],
];

const TRIAL_PAYMENT_METHODS = {
  require_payment_method: 'Require a payment method',
  no_payment_method: 'No payment method',
};

function settingText(value) {
  if (Object.hasOwn(TRIAL_PAYMENT_METHODS, value)) return TRIAL_PAYMENT_METHODS[value];
  if (value === true) return 'yes';
  if (value === false) return 'no';
  if (value === null || value === '') return 'none';
  return String(value);
}

/** With an API key the settings are shown, not changed: changing them is the operator's. */
function SettingsView({ app }) {
  return html`<section class="card" aria-labelledby="settings-title">
    <h2 id="settings-title">Settings</h2>
    <dl class="pairs">
      ${SETTING_LABELS.map(
        ([field, label]) => html`<dt key=${`t-${field}`}>${label}</dt>
          <dd key=${`d-${field}`} class="preserve">${settingText(app.settings[field])}</dd>`,
      )}
    </dl>
    <p class="muted">Only the admin token can change them.</p>
  </section>`;
}

export function AppPage({ route, keyMode, readOnly = keyMode }) {
  const { appId } = route;
  const loaded = useLoad(
    () => request(keyMode ? DashboardAppView : DashboardApp, { id: appId }),
    [appId, keyMode],
  );
  const [fresh, setFresh] = useState(() => freshKeys.get(appId));
  // Shown once: gone from memory as soon as it is on screen.
  if (fresh !== undefined) freshKeys.delete(appId);
  if (loaded.error) return html`<main><${ErrorMessage} error=${loaded.error} /></main>`;
  if (!loaded.data) return html`<main><${Loading} what="Loading the app" /></main>`;
  const app = loaded.data.app;
  if (!app)
    return html`<main><h1>App not found</h1><p class="empty">No app has the id <code>${appId}</code>. <a href="#/">Back</a></p></main>`;
  const base = `#/apps/${encodeURIComponent(app.id)}`;
  // A customer's page and an organization's (reached from a customer's) belong to the customers tab.
  const tab = route.page === 'customer' || route.page === 'organization' ? 'customers' : route.tab;
  // An API key manages neither keys nor plans; those stay the operator's.
  const tabs = readOnly ? TABS.filter(([id]) => id !== 'keys') : TABS;
  return html`<main>
    ${keyMode ? null : html`<p class="crumbs"><a href="#/">Apps</a> / <span>${app.name}</span></p>`}
    <h1>${app.name}</h1>
    <p class="muted">App ID <code>${app.id}</code> · created ${formatDate(app.createdAt)}</p>
    ${fresh ? html`<${SecretOnce} label="First API key" secret=${fresh} onDismiss=${() => setFresh(undefined)} />` : null}
    <nav class="tabs" aria-label="App sections">
      ${tabs.map(
        ([id, label]) =>
          html`<a href=${`${base}/${id}`} aria-current=${tab === id ? 'page' : undefined}>${label}</a>`,
      )}
    </nav>
    ${
      tab === 'settings'
        ? html`<${AnalyticsOverview} appId=${app.id} />
        <div class="columns">
          ${readOnly ? html`<${SettingsView} app=${app} />` : html`<${SettingsForm} app=${app} onSaved=${loaded.reload} />`}
          <${UrlTester} appId=${app.id} />
        </div>`
        : null
    }
    ${tab === 'keys' && !readOnly ? html`<${KeysTab} app=${app} reload=${loaded.reload} />` : null}
    ${tab === 'plans' ? html`<${PlansTab} appId=${app.id} readOnly=${readOnly} />` : null}
    ${
      tab === 'customers' && route.page === 'customer'
        ? html`<${CustomerPage} key=${route.customerId} appId=${app.id} customerId=${route.customerId} />`
        : null
    }
    ${
      route.page === 'organization'
        ? html`<${OrganizationPage} key=${route.organizationId} appId=${app.id} organizationId=${route.organizationId} />`
        : null
    }
    ${tab === 'customers' && route.page === 'app' ? html`<${CustomersTab} appId=${app.id} />` : null}
    ${tab === 'webhooks' ? html`<${WebhooksTab} appId=${app.id} />` : null}
    ${tab === 'analytics' ? html`<${AnalyticsTab} appId=${app.id} />` : null}
    ${!tabs.some(([id]) => id === tab) ? html`<p class="empty">No such section. <a href=${base}>Back to the app</a></p>` : null}
  </main>`;
}
