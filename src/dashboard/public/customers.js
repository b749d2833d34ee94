// Customers of an app: search by e-mail fragment with pages, and one customer's page with its
// subscription (cancel, pause, resume), metered balances and credit grants, invoices, organizations and
// entitlements as the API answers them.
import { request } from './api.js';
import { Metering } from './metering.js';
import {
  DashboardCancelSubscription,
  DashboardCustomer,
  DashboardCustomers,
  DashboardInvoices,
  DashboardOrganizations,
  DashboardPauseSubscription,
  DashboardResumeSubscription,
} from './operations.js';
import {
  ConfirmButton,
  ErrorMessage,
  Field,
  formatDate,
  formatValue,
  html,
  Loading,
  Notice,
  useLoad,
} from './ui.js';
import { useState } from './vendor/hooks.js';

const PAGE_SIZE = 20;

export function CustomersTab({ appId }) {
  const [draft, setDraft] = useState('');
  const [query, setQuery] = useState({ email: '', offset: 0 });
  const list = useLoad(
    () =>
      request(DashboardCustomers, {
        appId,
        email: query.email || null,
        limit: PAGE_SIZE,
        offset: query.offset,
      }),
    [appId, query.email, query.offset],
  );
  const submit = (event) => {
    event.preventDefault();
    setQuery({ email: draft.trim(), offset: 0 });
  };
  const page = list.data?.customers;
  const total = page?.pagination.total ?? 0;
  return html`<section class="card" aria-labelledby="customers-title">
    <h2 id="customers-title">Customers</h2>
    <form class="inline" role="search" onSubmit=${submit}>
      <${Field} label="E-mail contains">
        ${(p) => html`<input ...${p} type="search" spellcheck="false" value=${draft} onInput=${(e) => setDraft(e.currentTarget.value)} />`}
      <//>
      <button type="submit">Search</button>
    </form>
    ${list.loading ? html`<${Loading} what="Loading customers" />` : null}
    <${ErrorMessage} error=${list.error} />
    ${
      page && page.data.length === 0
        ? html`<p class="empty">${query.email ? `No customer's e-mail contains “${query.email}”.` : 'No customers yet.'}</p>`
        : null
    }
    ${
      page && page.data.length > 0
        ? html`<div class="table-wrap"><table>
            <caption class="visually-hidden">Customers</caption>
            <thead><tr><th scope="col">E-mail</th><th scope="col">Name</th><th scope="col">Created</th></tr></thead>
            <tbody>
              ${page.data.map(
                (c) => html`<tr key=${c.id}>
                  <td><a href=${`#/apps/${encodeURIComponent(appId)}/customers/${encodeURIComponent(c.id)}`}>${c.email}</a></td>
                  <td>${c.name ?? '—'}</td>
                  <td>${formatDate(c.createdAt)}</td>
                </tr>`,
              )}
            </tbody>
          </table></div>
          <nav class="pager" aria-label="Customer pages">
            <button type="button" class="secondary" disabled=${query.offset === 0}
              onClick=${() => setQuery((q) => ({ ...q, offset: Math.max(0, q.offset - PAGE_SIZE) }))}>Previous</button>
            <span>${page.pagination.offset + 1}–${page.pagination.offset + page.data.length} of ${total}</span>
            <button type="button" class="secondary" disabled=${query.offset + PAGE_SIZE >= total}
              onClick=${() => setQuery((q) => ({ ...q, offset: q.offset + PAGE_SIZE }))}>Next</button>
          </nav>`
        : null
    }
  </section>`;
}

function KeyValues({ values, empty }) {
  const entries = Object.entries(values);
  if (entries.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<dl class="pairs">${entries.map(([k, v]) => html`<dt key=${`k-${k}`}><code>${k}</code></dt><dd key=${`v-${k}`}>${formatValue(v)}</dd>`)}</dl>`;
}

function SubscriptionActions({ appId, subscription, onChanged }) {
  const { id, status, cancelAtPeriodEnd } = subscription;
  const run = (operation) => async () => {
    await request(operation, { appId, id });
    onChanged();
  };
  const plan = subscription.plan.name;
  const actions = [];
  if (status === 'active' || status === 'trialing' || status === 'past_due') {
    actions.push(html`<${ConfirmButton} key="pause" label="Pause" accessibleLabel=${`Pause subscription ${id}`}
      confirmLabel="Pause subscription" onConfirm=${run(DashboardPauseSubscription)}
      question=${`Pause the ${plan} subscription? Collection stops at Stripe and the customer loses the plan's entitlements until it is resumed.`} />`);
  }
  if (status === 'paused' || cancelAtPeriodEnd) {
    actions.push(html`<${ConfirmButton} key="resume" label="Resume" accessibleLabel=${`Resume subscription ${id}`}
      confirmLabel="Resume subscription" onConfirm=${run(DashboardResumeSubscription)}
      question=${`Resume the ${plan} subscription? Collection starts again at Stripe.`} />`);
  }
  if (status !== 'canceled' && status !== 'incomplete_expired') {
    actions.push(html`<${ConfirmButton} key="cancel" label="Cancel" accessibleLabel=${`Cancel subscription ${id}`}
      confirmLabel="Cancel subscription now" className="danger" onConfirm=${run(DashboardCancelSubscription)}
      question=${`Cancel the ${plan} subscription now? This cannot be undone.`} />`);
  }
  return actions.length > 0 ? html`<span class="actions">${actions}</span>` : null;
}

function Invoices({ appId, customerId }) {
  const invoices = useLoad(() => request(DashboardInvoices, { appId, customerId }), [appId, customerId]);
  return html`<section class="card" aria-labelledby="invoices-title">
    <h2 id="invoices-title">Invoices</h2>
    ${invoices.loading ? html`<${Loading} what="Loading invoices from Stripe" />` : null}
    <${ErrorMessage} error=${invoices.error} />
    ${invoices.data && invoices.data.invoices.length === 0 ? html`<p class="empty">No invoices.</p>` : null}
    ${
      invoices.data && invoices.data.invoices.length > 0
        ? html`<div class="table-wrap"><table>
          <caption class="visually-hidden">Invoices</caption>
          <thead><tr><th scope="col">Date</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Invoice</th></tr></thead>
          <tbody>${invoices.data.invoices.map(
            (i) => html`<tr key=${i.id}>
              <td>${formatDate(i.created)}</td>
              <td>${(i.amountPaid / 100).toFixed(2)} ${i.currency.toUpperCase()}</td>
              <td>${i.status ?? '—'}</td>
              <td>${i.hostedInvoiceUrl ? html`<a href=${i.hostedInvoiceUrl} target="_blank" rel="noopener noreferrer">${i.id}</a>` : i.id}</td>
            </tr>`,
          )}</tbody>
        </table></div>`
        : null
    }
  </section>`;
}

function Organizations({ appId, customerId }) {
  const organizations = useLoad(
    () => request(DashboardOrganizations, { appId, customerId }),
    [appId, customerId],
  );
  const disabled = organizations.error?.code === 'FORBIDDEN';
  return html`<section class="card" aria-labelledby="organizations-title">
    <h2 id="organizations-title">Organizations</h2>
    ${organizations.loading ? html`<${Loading} what="Loading organizations" />` : null}
    ${disabled ? html`<p class="empty">${organizations.error.message}.</p>` : html`<${ErrorMessage} error=${organizations.error} />`}
    ${organizations.data && organizations.data.organizations.length === 0 ? html`<p class="empty">Not a member of any organization.</p>` : null}
    ${
      organizations.data && organizations.data.organizations.length > 0
        ? html`<ul class="plain">${organizations.data.organizations.map(
            (o) =>
              html`<li key=${o.id}><a href=${`#/apps/${encodeURIComponent(appId)}/organizations/${encodeURIComponent(o.id)}`}>${o.name}</a> <code>${o.id}</code></li>`,
          )}</ul>`
        : null
    }
  </section>`;
}

export function CustomerPage({ appId, customerId }) {
  const loaded = useLoad(() => request(DashboardCustomer, { appId, id: customerId }), [appId, customerId]);
  const [changed, setChanged] = useState(undefined);
  const back = html`<p><a href=${`#/apps/${encodeURIComponent(appId)}/customers`}>← All customers</a></p>`;
  if (loaded.error) return html`<section>${back}<${ErrorMessage} error=${loaded.error} /></section>`;
  if (!loaded.data) return html`<section>${back}<${Loading} what="Loading the customer" /></section>`;
  const { customer, currentSubscription, entitlements } = loaded.data;
  const current = customer.subscriptions.find((s) => s.id === currentSubscription?.id);
  const onChanged = (what) => () => {
    setChanged(what);
    loaded.reload();
  };
  return html`<section aria-labelledby="customer-title">
    ${back}
    <h2 id="customer-title">${customer.email}</h2>
    ${changed ? html`<${Notice}>${changed}<//>` : null}
    <div class="columns">
      <section class="card" aria-labelledby="profile-title">
        <h3 id="profile-title">Profile</h3>
        <dl class="pairs">
          <dt>ID</dt><dd><code>${customer.id}</code></dd>
          <dt>E-mail</dt><dd>${customer.email}</dd>
          <dt>Name</dt><dd>${customer.name ?? '—'}</dd>
          <dt>Stripe customer</dt><dd>${customer.paymentCustomerId ? html`<code>${customer.paymentCustomerId}</code>` : 'not linked'}</dd>
          <dt>Created</dt><dd>${formatDate(customer.createdAt)}</dd>
          <dt>Updated</dt><dd>${formatDate(customer.updatedAt)}</dd>
        </dl>
        <h3>Metadata</h3>
        <${KeyValues} values=${customer.metadata} empty="No metadata." />
      </section>
      <section class="card" aria-labelledby="entitlements-title">
        <h3 id="entitlements-title">Entitlements</h3>
        <p>Plan: <strong>${entitlements.planName ?? 'none'}</strong></p>
        <${KeyValues} values=${entitlements.features} empty="No features." />
      </section>
    </div>
    <section class="card" aria-labelledby="subscription-title">
      <h3 id="subscription-title">Current subscription</h3>
      ${
        current
          ? html`<p><strong>${current.plan.name}</strong> · <span class="status">${current.status}</span>
            ${current.cancelAtPeriodEnd ? ' · cancels at the period end' : ''}
            ${current.currentPeriodEnd ? ` · period ends ${formatDate(current.currentPeriodEnd)}` : ''}</p>`
          : html`<p class="empty">No entitling subscription.</p>`
      }
      <h3>History</h3>
      ${
        customer.subscriptions.length === 0
          ? html`<p class="empty">No subscriptions.</p>`
          : html`<div class="table-wrap"><table>
            <caption class="visually-hidden">Subscription history</caption>
            <thead><tr><th scope="col">Plan</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Period end</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${customer.subscriptions.map(
              (s) => html`<tr key=${s.id}>
                <td>${s.plan.name} <code>${s.id}</code></td>
                <td><span class="status" data-subscription=${s.id}>${s.status}</span>${s.cancelAtPeriodEnd ? ' (cancels at period end)' : ''}</td>
                <td>${formatDate(s.createdAt)}</td>
                <td>${formatDate(s.currentPeriodEnd)}</td>
                <td><${SubscriptionActions} appId=${appId} subscription=${s} onChanged=${onChanged(`Subscription ${s.id} changed.`)} /></td>
              </tr>`,
            )}</tbody>
          </table></div>`
      }
    </section>
    <${Metering} appId=${appId} customerId=${customer.id} />
    <${Invoices} appId=${appId} customerId=${customer.id} />
    <${Organizations} appId=${appId} customerId=${customer.id} />
  </section>`;
}
