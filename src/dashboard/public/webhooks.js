// Webhook endpoints of an app: add, edit, disable or enable, delete, rotate the secret (shown once), send
// a test event; their deliveries with each request and answer, and Retry for one that failed.
import { request } from './api.js';
import {
  DashboardCreateWebhookEndpoint,
  DashboardDeleteWebhookEndpoint,
  DashboardRetryWebhookDelivery,
  DashboardRotateWebhookSecret,
  DashboardSendWebhookTest,
  DashboardUpdateWebhookEndpoint,
  DashboardWebhookDeliveries,
  DashboardWebhookEndpoints,
} from './operations.js';
import {
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

/** What the receiver was sent and what it answered, for one delivery (its latest attempt's). */
function Exchange({ delivery }) {
  const last = delivery.attemptLog[0];
  const headers = Object.entries(last?.requestHeaders ?? {});
  return html`<details class="exchange">
    <summary>Request and answer</summary>
    <h5>Request body</h5>
    <pre>${delivery.requestBody}</pre>
    <h5>Request headers</h5>
    ${headers.length === 0 ? html`<p class="empty">Not sent yet.</p>` : html`<pre>${headers.map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>`}
    <h5>Answer</h5>
    <p>${last ? `${last.statusCode ?? 'no answer'} in ${last.durationMs} ms` : 'None yet.'}</p>
    ${last?.excerpt ? html`<pre>${last.excerpt}</pre>` : null}
  </details>`;
}

function Deliveries({ endpoint }) {
  const deliveries = useLoad(
    () => request(DashboardWebhookDeliveries, { endpointId: endpoint.id }),
    [endpoint.id],
  );
  const [error, setError] = useState(undefined);
  const retry = async (delivery) => {
    setError(undefined);
    try {
      await request(DashboardRetryWebhookDelivery, { id: delivery.id });
      deliveries.reload();
    } catch (e) {
      setError(e);
    }
  };
  const list = deliveries.data?.webhookDeliveries;
  return html`<section class="deliveries" aria-label=${`Deliveries to ${endpoint.url}`}>
    <div class="title-row">
      <h4>Deliveries</h4>
      <button type="button" class="secondary" aria-label=${`Refresh deliveries to ${endpoint.url}`} onClick=${deliveries.reload}>Refresh</button>
    </div>
    ${deliveries.loading && !list ? html`<${Loading} what="Loading deliveries" />` : null}
    <${ErrorMessage} error=${deliveries.error ?? error} />
    ${list && list.length === 0 ? html`<p class="empty">No deliveries yet.</p>` : null}
    ${
      list && list.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Deliveries to ${endpoint.url}</caption>
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${list.map((d) => {
            const last = d.attemptLog[0];
            return html`<tr key=${d.id}>
              <td data-label="Event">${d.eventType} <code>${d.eventId}</code><${Exchange} delivery=${d} /></td>
              <td data-label="Status"><span class="status" data-delivery=${d.id}>${d.status}</span>${d.status === 'pending' && d.nextAttemptAt ? html`<br /><small>next ${formatDate(d.nextAttemptAt)}</small>` : null}</td>
              <td data-label="Attempts">${d.attempts}</td>
              <td data-label="Last answer" class="excerpt">${last ? `${last.statusCode ?? 'no answer'} · ${last.excerpt}` : '—'}</td>
              <td data-label="Created">${formatDate(d.createdAt)}</td>
              <td>${
                d.status === 'failed'
                  ? html`<button type="button" class="secondary" aria-label=${`Retry delivery ${d.id}`} onClick=${() => retry(d)}>Retry</button>`
                  : null
              }</td>
            </tr>`;
          })}</tbody>
        </table></div>`
        : null
    }
  </section>`;
}

/** Adds an endpoint (`endpoint` absent: its secret is shown once after) or changes one. */
function EndpointForm({ appId, endpoint, onDone, onCancel }) {
  const [form, setForm] = useState(() => ({
    url: endpoint?.url ?? '',
    description: endpoint?.description ?? '',
    events: endpoint?.events.join(' ') ?? '',
  }));
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const { busy, errors, error, submit } = useSubmit(async () => {
    const events = form.events.split(/[\s,]+/).filter(Boolean);
    const description = form.description.trim() === '' ? null : form.description.trim();
    const input = { url: form.url.trim(), events, description };
    if (endpoint) {
      await request(DashboardUpdateWebhookEndpoint, { id: endpoint.id, input });
      onDone();
    } else {
      const { createWebhookEndpoint } = await request(DashboardCreateWebhookEndpoint, {
        input: { ...input, appId },
      });
      onDone(createWebhookEndpoint.secret);
    }
  });
  const title = endpoint ? `Edit endpoint ${endpoint.url}` : 'New endpoint';
  return html`<form class="card" onSubmit=${submit} novalidate aria-label=${title}>
    <h3>${endpoint ? 'Edit endpoint' : title}</h3>
    <${Field} label="Endpoint URL" error=${errors.url}>
      ${(p) => html`<input ...${p} type="url" spellcheck="false" value=${form.url} onInput=${text('url')} />`}
    <//>
    <${Field} label="Description" error=${errors.description}>
      ${(p) => html`<input ...${p} type="text" value=${form.description} onInput=${text('description')} />`}
    <//>
    <${Field} label="Event types" error=${errors.events} hint="Separated by spaces or commas, e.g. customer.created subscription.updated; empty for every type.">
      ${(p) => html`<input ...${p} type="text" spellcheck="false" value=${form.events} onInput=${text('events')} />`}
    <//>
    <${ErrorMessage} error=${error} />
    <div class="actions">
      <button type="submit" disabled=${busy}>${endpoint ? 'Save endpoint' : 'Add endpoint'}</button>
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

/** `reloading`: the list is being fetched again, so `endpoint` may be older than what is stored. */
function Endpoint({ endpoint, reloading, onChanged, onSecret }) {
  const [editing, setEditing] = useState(false);
  const [tested, setTested] = useState(0);
  const [error, setError] = useState(undefined);
  const { id, url } = endpoint;
  const act = (action) => async () => {
    setError(undefined);
    try {
      await action();
    } catch (e) {
      setError(e);
    }
  };
  const setEnabled = (enabled) =>
    act(async () => {
      await request(DashboardUpdateWebhookEndpoint, { id, input: { enabled } });
      onChanged(`Endpoint ${url} ${enabled ? 'enabled' : 'disabled'}.`);
    });
  const sendTest = act(async () => {
    await request(DashboardSendWebhookTest, { id });
    setTested((n) => n + 1);
  });
  return html`<article class="endpoint" aria-label=${`Endpoint ${url}`}>
    <h3><code>${url}</code></h3>
    <p class="muted">${endpoint.enabled ? 'enabled' : 'disabled'} · ${endpoint.events.length === 0 ? 'every event type' : endpoint.events.join(', ')}
      ${endpoint.description ? ` · ${endpoint.description}` : ''} · created ${formatDate(endpoint.createdAt)}</p>
    <div class="actions">
      <button type="button" class="secondary" aria-label=${`Send a test event to ${url}`} disabled=${!endpoint.enabled} onClick=${sendTest}>Send test event</button>
      <button type="button" class="secondary" aria-label=${`Edit endpoint ${url}`} disabled=${reloading} onClick=${() => setEditing(true)}>Edit</button>
      <button type="button" class="secondary" aria-label=${`${endpoint.enabled ? 'Disable' : 'Enable'} endpoint ${url}`} onClick=${setEnabled(!endpoint.enabled)}>${endpoint.enabled ? 'Disable' : 'Enable'}</button>
      <${ConfirmButton} label="Rotate secret" accessibleLabel=${`Rotate the secret of ${url}`} confirmLabel="Rotate secret"
        question="Make a new signing secret? It is shown once; the current one keeps signing beside it for 24 hours, time to update the receiver."
        onConfirm=${async () => onSecret((await request(DashboardRotateWebhookSecret, { id })).rotateWebhookEndpointSecret.secret)} />
      <${ConfirmButton} label="Delete" accessibleLabel=${`Delete endpoint ${url}`} confirmLabel="Delete endpoint" className="danger"
        question=${`Delete the endpoint ${url} and its deliveries? Events still pending for it are not sent. This cannot be undone.`}
        onConfirm=${async () => {
          await request(DashboardDeleteWebhookEndpoint, { id });
          onChanged(`Endpoint ${url} deleted.`);
        }} />
    </div>
    <${ErrorMessage} error=${error} />
    ${tested ? html`<${Notice}>Test event sent: it is listed below as webhook.test.<//>` : null}
    ${
      editing
        ? html`<${EndpointForm} endpoint=${endpoint} onCancel=${() => setEditing(false)}
          onDone=${() => {
            setEditing(false);
            onChanged(`Endpoint ${url} saved.`);
          }} />`
        : null
    }
    <${Deliveries} key=${tested} endpoint=${endpoint} />
  </article>`;
}

export function WebhooksTab({ appId }) {
  const endpoints = useLoad(() => request(DashboardWebhookEndpoints, { appId }), [appId]);
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState(undefined);
  const [changed, setChanged] = useState(undefined);
  const list = endpoints.data?.webhookEndpoints;
  const onChanged = (what) => {
    setChanged(what);
    endpoints.reload();
  };
  return html`<section class="card" aria-labelledby="webhooks-title">
    <div class="title-row">
      <h2 id="webhooks-title">Webhook endpoints</h2>
      ${adding ? null : html`<button type="button" onClick=${() => setAdding(true)}>Add endpoint</button>`}
    </div>
    ${
      secret
        ? html`<${SecretOnce} label="Signing secret" secret=${secret}
      warning="Copy this secret now, for your receiver to verify signatures: it is not shown again (rotate it to get a new one)." onDismiss=${() => setSecret(undefined)} />`
        : null
    }
    ${changed ? html`<${Notice}>${changed}<//>` : null}
    ${
      adding
        ? html`<${EndpointForm} appId=${appId} onCancel=${() => setAdding(false)}
          onDone=${(value) => {
            setAdding(false);
            setSecret(value);
            endpoints.reload();
          }} />`
        : null
    }
    ${endpoints.loading && !list ? html`<${Loading} what="Loading webhook endpoints" />` : null}
    <${ErrorMessage} error=${endpoints.error} />
    ${list && list.length === 0 ? html`<p class="empty">No webhook endpoints.</p>` : null}
    ${list?.map(
      (endpoint) => html`<${Endpoint} key=${endpoint.id} endpoint=${endpoint} onChanged=${onChanged}
        reloading=${endpoints.loading}
        onSecret=${(value) => {
          setChanged(undefined);
          setSecret(value);
        }} />`,
    )}
  </section>`;
}
