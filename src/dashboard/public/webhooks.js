// Webhook endpoints of an app and their deliveries, with Retry for a delivery that is not in flight.
import { ApiError, request } from './api.js';
import {
  DashboardCreateWebhookEndpoint,
  DashboardRetryWebhookDelivery,
  DashboardWebhookDeliveries,
  DashboardWebhookEndpoints,
} from './operations.js';
import { ErrorMessage, Field, formatDate, html, Loading, SecretOnce, useLoad } from './ui.js';
import { useState } from './vendor/hooks.js';

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
              <td>${d.eventType} <code>${d.eventId}</code></td>
              <td><span class="status" data-delivery=${d.id}>${d.status}</span>${d.status === 'pending' && d.nextAttemptAt ? html`<br /><small>next ${formatDate(d.nextAttemptAt)}</small>` : null}</td>
              <td>${d.attempts}</td>
              <td>${last ? `${last.statusCode ?? 'no answer'} · ${last.excerpt}` : '—'}</td>
              <td>${formatDate(d.createdAt)}</td>
              <td>${
                d.status === 'pending'
                  ? null
                  : html`<button type="button" class="secondary" aria-label=${`Retry delivery ${d.id}`} onClick=${() => retry(d)}>Retry</button>`
              }</td>
            </tr>`;
          })}</tbody>
        </table></div>`
        : null
    }
  </section>`;
}

function AddEndpoint({ appId, onCreated, onCancel }) {
  const [form, setForm] = useState({ url: '', description: '', events: '' });
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  const text = (field) => (e) => setForm((f) => ({ ...f, [field]: e.currentTarget.value }));
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({});
    setError(undefined);
    const events = form.events.split(/[\s,]+/).filter(Boolean);
    try {
      const input = { appId, url: form.url.trim(), events };
      if (form.description.trim() !== '') input.description = form.description.trim();
      const { createWebhookEndpoint } = await request(DashboardCreateWebhookEndpoint, { input });
      onCreated(createWebhookEndpoint.secret);
    } catch (e) {
      const byField = e instanceof ApiError ? e.fieldErrors() : {};
      setErrors(byField);
      if (Object.keys(byField).length === 0) setError(e);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="card" onSubmit=${submit} novalidate aria-labelledby="endpoint-form-title">
    <h3 id="endpoint-form-title">New endpoint</h3>
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
      <button type="submit" disabled=${busy}>Add endpoint</button>
      <button type="button" class="secondary" onClick=${onCancel}>Cancel</button>
    </div>
  </form>`;
}

export function WebhooksTab({ appId }) {
  const endpoints = useLoad(() => request(DashboardWebhookEndpoints, { appId }), [appId]);
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState(undefined);
  const list = endpoints.data?.webhookEndpoints;
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
    ${
      adding
        ? html`<${AddEndpoint} appId=${appId} onCancel=${() => setAdding(false)}
          onCreated=${(value) => {
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
      (
        endpoint,
      ) => html`<article class="endpoint" key=${endpoint.id} aria-label=${`Endpoint ${endpoint.url}`}>
        <h3><code>${endpoint.url}</code></h3>
        <p class="muted">${endpoint.enabled ? 'enabled' : 'disabled'} · ${endpoint.events.length === 0 ? 'every event type' : endpoint.events.join(', ')}
          ${endpoint.description ? ` · ${endpoint.description}` : ''} · created ${formatDate(endpoint.createdAt)}</p>
        <${Deliveries} endpoint=${endpoint} />
      </article>`,
    )}
  </section>`;
}
